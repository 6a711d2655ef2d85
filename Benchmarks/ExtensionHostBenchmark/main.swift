// Measures one full extension call as the host makes it: spawn ba-extension-runner, enter the
// sandbox, dlopen the library, call downloads(for:) through libffi, receive and validate the
// downloads, reap the process. Reports median and p99 over many calls for the C and the Swift
// sample (the sample manifest, and a manifest of N downloads), with the sandbox on and off, next
// to the cost of spawning /bin/true on the same machine in the same run (the floor of any
// process-per-call design).
//
// Usage: ExtensionHostBenchmark BUILD_DIR [calls] [downloads] [c|swift]
import BAExtensionHost
import BackgroundAssets
import BackgroundAssetsTesting
import CBASystem
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(
        Data("usage: ExtensionHostBenchmark BUILD_DIR [calls=50] [downloads=1000] [c|swift]\n".utf8))
    exit(64)
}
let build = URL(fileURLWithPath: arguments[1])
let calls = arguments.count > 2 ? Int(arguments[2]) ?? 50 : 50
let downloadCount = arguments.count > 3 ? Int(arguments[3]) ?? 1000 : 1000
let only = arguments.count > 4 ? arguments[4] : nil

// A manifest with `downloadCount` assets.
let assets = (0..<downloadCount).map { index in
    #"{"identifier": "asset-\#(index)", "url": "https://cdn.example.com/assets/\#(index).bin", "fileSize": \#(1024 + index), "priority": \#(index % 101)}"#
}
let manifestPath = FileManager.default.temporaryDirectory.appendingPathComponent("ba-bench-manifest-\(getpid()).json")
    .path
try Data(#"{"applicationGroupIdentifier": "group.bench", "assets": [\#(assets.joined(separator: ","))]}"#.utf8).write(
    to: URL(fileURLWithPath: manifestPath))
defer { try? FileManager.default.removeItem(atPath: manifestPath) }

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

func measure(_ name: String, _ body: () throws -> Void) rethrows -> (median: Double, p99: Double) {
    try body()  // warm-up: page cache, dynamic loader caches
    var samples: [Double] = []
    let clock = ContinuousClock()
    for _ in 0..<calls {
        let start = clock.now
        try body()
        samples.append(milliseconds(clock.now - start))
    }
    samples.sort()
    let result = (median: percentile(samples, 0.5), p99: percentile(samples, 0.99))
    print(
        String(
            format: "%-50@ median %7.2f ms   p99 %7.2f ms   (n=%d)", name as NSString, result.median, result.p99, calls)
    )
    return result
}

let runner = build.appendingPathComponent("ba-extension-runner").path
let spawning = try BAExtensionSupervisor(runnerPath: runner, sandbox: BAExtensionSandbox(), warmRunner: false)
let warm = try BAExtensionSupervisor(runnerPath: runner, sandbox: BAExtensionSandbox(), warmRunner: true)
print("one full call, as the host makes it: spawn (or fork from the warm runner) + sandbox + dlopen +")
print("downloads(for:) + downloads returned and validated + reap; the sandbox is on unless said otherwise")

let baseline = measure("posix_spawn + wait of /bin/true (floor)") {
    var pid: pid_t = 0
    var argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
    defer { free(argv[0]) }
    guard posix_spawn(&pid, "/bin/true", nil, nil, &argv, environ) == 0 else { fatalError("cannot spawn /bin/true") }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
}

// The sample manifest (5 downloads): what the targets are about.
let sampleManifest = build.appendingPathComponent("../../../Examples/Manifests/sample-manifest.json").standardized.path
var failures = 0
var spawnedWhenWarm = 0

@MainActor func call(
    _ supervisor: BAExtensionSupervisor, _ path: String, manifest: String, expecting count: Int, forked: Bool = false
) throws {
    let run = try supervisor.runBlocking(.contentRequest(.install, libraryPath: path, manifestPath: manifest))
    if forked && !run.wasForked { spawnedWhenWarm += 1 }
    guard run.verdict == .ok, run.downloads.count == count else {
        failures += 1
        FileHandle.standardError.write(
            Data("unexpected result: \(run.verdict), \(run.downloads.count) downloads\n".utf8))
        return
    }
}

// The warm runner starts in the background with the first call; calls are spawned until it is ready.
let warmUntil = ContinuousClock.now + .seconds(30)
while ContinuousClock.now < warmUntil {
    let run = try warm.runBlocking(
        .contentRequest(
            .install, libraryPath: build.appendingPathComponent("libSampleCExtension.so").path,
            manifestPath: sampleManifest))
    if run.wasForked { break }
}

let samples = [
    ("c", "C sample", "libSampleCExtension.so", 1.5),
    ("swift", "Swift sample", "libSampleSwiftExtension.so", 3.0),
]
for (key, label, library, target) in samples where only == nil || only == key {
    let path = build.appendingPathComponent(library).path
    _ = try measure("\(label), spawned") {
        try call(spawning, path, manifest: sampleManifest, expecting: 5)
    }
    let result = try measure("\(label), forked from the warm runner") {
        try call(warm, path, manifest: sampleManifest, expecting: 5, forked: true)
    }
    print(
        String(
            format: "  %.1fx the /bin/true floor; target median <= %.1f ms: %@; p99 <= 2x median: %@",
            result.median / baseline.median, target,
            result.median <= target ? "met" : String(format: "NOT met (%.1fx the target)", result.median / target),
            result.p99 <= 2 * result.median ? "met" : "NOT met"))
    _ = try measure("\(label), forked, \(downloadCount) downloads") {
        try call(warm, path, manifest: manifestPath, expecting: downloadCount, forked: true)
    }
}
// The sandbox's own cost: the same calls without it (and its warning, once).
let open = try BAExtensionSupervisor(runnerPath: runner, sandbox: .disabled, warmRunner: false)
for (key, label, library, _) in samples where only == nil || only == key {
    let path = build.appendingPathComponent(library).path
    _ = try measure("\(label), spawned, sandbox OFF") {
        try call(open, path, manifest: sampleManifest, expecting: 5)
    }
}
if spawnedWhenWarm > 0 { print("note: \(spawnedWhenWarm) calls meant to be forked were spawned") }
exit(failures == 0 ? 0 : 1)
