// basd at scale, measured as an app sees it (release build; Benchmarks/basd.sh runs it):
//   small  BASE N     N x 16 KiB (BASE/small/fNNNNN.bin) scheduled one by one through
//                     BADownloadManager, until the last finished delegate callback; prints seconds
//                     and basd's CPU seconds.
//   queue  N          N downloads scheduled one by one (to a server that never answers), then
//                     fetchCurrentDownloads; prints the rate, the listing's latency, basd's RSS
//                     and open descriptors.
//   idle   SECONDS    basd with one registered app and nothing due: its wake-ups (context
//                     switches) per second and RSS.
//   extension MANIFEST_URL N LIBRARY [TIMEOUT]
//                     an app that is never launched, its extension LIBRARY (Benchmarks/BenchExtension),
//                     installed with the protocol's installApp (what `ba install` sends); the
//                     extension returns the N downloads the manifest lists. Prints the seconds from
//                     the install until basd recorded the N-th finished (or failed) event (as the
//                     CLI's event stream sees it), and until the N-th call reached the extension
//                     (lines it appended to a file in its app group container); basd's CPU to both.
//   responsive ROOT BASE_URL N LIBRARY
//                     the same app, but its extension's N downloads go to a listener that never
//                     answers (the manifest is written to ROOT, which an asset server serves at
//                     BASE_URL); while it is installed, another client asks `status` in a loop:
//                     prints the worst answer and when it came (issue 33). BENCH_ESSENTIAL=1
//                     makes the N downloads essential.
// Each starts its own basd (BUILD_DIR/basd) in a temporary state folder, with a settings file of
// its own (defaults, but for extension: a daily runtime allowance of a day, so the N calls are not
// held back; $BENCH_BACKGROUND_CONCURRENCY, when set, becomes backgroundDownloadConcurrency), and ends it;
// $BENCH_BASD_LOG, when set, is the file basd's log goes to.
// Usage: BasdBenchmark BUILD_DIR small BASE N | queue N | idle SECONDS | extension MANIFEST_URL N LIBRARY [TIMEOUT]
//        | responsive ROOT BASE_URL N LIBRARY
import BADaemonProtocol
import BackgroundAssets
import Foundation

let arguments = CommandLine.arguments
let usage =
    "usage: BasdBenchmark BUILD_DIR small BASE N | queue N | idle SECONDS | extension MANIFEST_URL N LIBRARY [TIMEOUT] "
    + "| responsive ROOT BASE_URL N LIBRARY"
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data((usage + "\n").utf8))
    exit(64)
}
let build = arguments[1]
let app = "com.example.bench"
let group = "group.com.example.bench"

/// A basd of its own, in a temporary folder.
final class Basd {
    let process = Process()
    let directory: String
    let socketPath: String

    /// Starts basd with `settings` as its config.json (never the user's), and registers the
    /// benchmark's app unless `registerApp` is false.
    init(settings: [String: Any] = [:], registerApp: Bool = true) throws {
        directory = NSTemporaryDirectory() + "ba-bench-basd-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        socketPath = directory + "/basd.sock"
        let config = directory + "/config.json"
        // Downloads to loopback only (the benchmark's servers), unless a run says otherwise.
        let confined = settings.merging(["allowedHosts": ["127.0.0.1", "localhost", "::1"]]) { own, _ in own }
        try JSONSerialization.data(withJSONObject: confined).write(to: URL(fileURLWithPath: config))
        process.executableURL = URL(fileURLWithPath: build + "/basd")
        process.arguments = ["--state-dir", directory + "/state", "--socket", socketPath, "--config", config]
        // $BENCH_BASD_LOG: a file for basd's log (created or emptied), else it goes nowhere.
        let logPath = ProcessInfo.processInfo.environment["BENCH_BASD_LOG"]
        if let logPath { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let errors = FileHandle(forWritingAtPath: logPath ?? "/dev/null")
        process.standardError = errors
        process.standardOutput = Pipe()
        try process.run()
        // Until basd answers (the socket file exists before basd listens on it), at most 5 s.
        var answered = false
        for _ in 0..<500 where !answered {
            if let probe = try? DaemonClient(socketPath: socketPath, client: ClientInfo(role: .cli, pid: getpid())) {
                answered = (try? probe.call(.status)) != nil
                probe.close()
            }
            if !answered { usleep(10_000) }
        }
        guard answered else { throw BenchmarkError("basd did not answer on \(socketPath) within 5 s") }
        guard registerApp else { return }
        let cli = try DaemonClient(socketPath: socketPath, client: ClientInfo(role: .cli, pid: getpid()))
        try cli.call(
            .registerApp(
                AppRegistration(
                    bundleIdentifier: app, version: "1", appGroupIdentifier: group, appDirectory: directory,
                    extensionPath: nil)))
        cli.close()
    }

    var pid: Int32 { process.processIdentifier }

    /// A field of /proc/PID/status, in its unit (kB for memory).
    func status(_ field: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0") ?? 0
        }
        return 0
    }

    /// basd's CPU seconds so far (utime + stime).
    var cpuSeconds: Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Context switches so far, by thread.
    var switchesByThread: [String: Int] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var counts: [String: Int] = [:]
        for task in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else {
                continue
            }
            for line in text.split(separator: "\n") where line.contains("ctxt_switches") {
                counts[task, default: 0] +=
                    Int(line.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "0") ?? 0
            }
        }
        return counts
    }

    var descriptors: Int { ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).count }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

final class Counter: NSObject, BADownloadManagerDelegate, @unchecked Sendable {
    let lock = NSCondition()
    var finished = 0
    var failed = 0

    func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {
        lock.withLock {
            finished += 1
            lock.broadcast()
        }
    }

    func download(_ download: BADownload, failedWithError error: any Error) {
        lock.withLock {
            failed += 1
            lock.broadcast()
        }
    }

    func wait(for count: Int, timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        return lock.withLock {
            while finished + failed < count {
                guard lock.wait(until: deadline) else { return false }
            }
            return true
        }
    }
}

func seconds(since start: ContinuousClock.Instant) -> Double { seconds(from: start, to: .now) }

func download(_ identifier: String, _ url: String) -> BAURLDownload {
    BAURLDownload(
        identifier: identifier, request: URLRequest(url: URL(string: url)!), fileSize: 0,
        applicationGroupIdentifier: group)
}

let mode = arguments[2]
var settings: [String: Any] = [:]
// The extension's N calls are not to wait for tomorrow's runtime allowance (300 s by default).
if mode == "extension" || mode == "responsive" { settings["dailyRuntimeAllowanceSeconds"] = 86_400 }
if let value = ProcessInfo.processInfo.environment["BENCH_BACKGROUND_CONCURRENCY"], let concurrency = Int(value) {
    settings["backgroundDownloadConcurrency"] = concurrency
}
let basd = try Basd(settings: settings, registerApp: mode != "extension" && mode != "responsive")
defer { basd.stop() }
let manager = BADownloadManager.shared
manager.baConfigure(bundleIdentifier: app, socketPath: basd.socketPath)

switch mode {
case "small":
    let base = arguments[3]
    let count = Int(arguments[4]) ?? 5000
    let counter = Counter()
    manager.delegate = counter
    let cpuBefore = basd.cpuSeconds
    let start = ContinuousClock.now
    for index in 0..<count {
        try manager.scheduleDownload(download("f\(index)", base + "/small/f" + String(format: "%05d", index) + ".bin"))
    }
    guard counter.wait(for: count, timeout: 600) else {
        print("small: timed out with \(counter.finished) finished, \(counter.failed) failed")
        exit(1)
    }
    let elapsed = seconds(since: start)
    let cpu = basd.cpuSeconds - cpuBefore
    print(
        String(
            format: "small %d: %.3f s to the last callback, basd CPU %.3f s (%.3f ms per download), %d failed",
            count, elapsed, cpu, cpu * 1000 / Double(count), counter.failed))
case "queue":
    let count = Int(arguments[3]) ?? 100_000
    // A listener that never answers: the few running transfers hang, the rest stay queued.
    let port = silentListener()
    let start = ContinuousClock.now
    for index in 0..<count {
        try manager.scheduleDownload(download("q\(index)", "http://127.0.0.1:\(port)/q\(index)"))
    }
    let elapsed = seconds(since: start)
    let queuedRSS = basd.status("VmRSS") / 1024
    let listStart = ContinuousClock.now
    let listed = try manager.fetchCurrentDownloads().count
    let listing = seconds(since: listStart)
    usleep(1_500_000)  // basd gives a long listing's memory back a second after it
    print(
        String(
            format:
                "queue %d: %.0f schedules/s; fetchCurrentDownloads %d in %.3f s; basd RSS %d MiB queued, %d MiB after the listing, %d fds",
            count, Double(count) / elapsed, listed, listing, queuedRSS, basd.status("VmRSS") / 1024, basd.descriptors))
case "idle":
    let duration = Double(arguments[3]) ?? 30
    usleep(2_000_000)  // past start-up
    let before = basd.switchesByThread
    usleep(UInt32(duration * 1_000_000))
    let after = basd.switchesByThread
    // Threads alive at both readings (a thread that ended took its count with it).
    let woken = after.reduce(0) { $0 + max(0, $1.value - (before[$1.key] ?? 0)) }
    print(
        String(
            format: "idle %.0f s: %.2f wake-ups/s, basd RSS %d MiB", duration, Double(woken) / duration,
            basd.status("VmRSS") / 1024))
case "extension":
    guard arguments.count >= 6, let count = Int(arguments[4]), count > 0 else {
        FileHandle.standardError.write(Data((usage + "\n").utf8))
        basd.stop()
        exit(64)
    }
    let timeout = arguments.count > 6 ? Double(arguments[6]) ?? 900 : 900
    let status = runExtensionBenchmark(
        basd: basd, manifestURL: arguments[3], count: count, library: arguments[5], timeout: timeout)
    if status != 0 {
        basd.stop()
        exit(status)
    }
case "responsive":
    guard arguments.count >= 7, let count = Int(arguments[5]), count > 0 else {
        FileHandle.standardError.write(Data((usage + "\n").utf8))
        basd.stop()
        exit(64)
    }
    // The downloads go to a listener that never answers: they stay active, and what the install
    // costs basd is the install alone.
    let port = silentListener()
    // BENCH_ESSENTIAL=1: the set is essential (each goes to the engine at once, not through the window).
    let essential = ProcessInfo.processInfo.environment["BENCH_ESSENTIAL"] == "1" ? " essential" : ""
    let manifest = (0..<count).map { "r\($0) 16384 http://127.0.0.1:\(port)/r\($0)\(essential)\n" }.joined()
    try Data(manifest.utf8).write(to: URL(fileURLWithPath: arguments[3] + "/responsive-manifest.txt"))
    let status = runResponsiveBenchmark(
        basd: basd, manifestURL: arguments[4] + "/responsive-manifest.txt", count: count, library: arguments[6])
    if status != 0 {
        basd.stop()
        exit(status)
    }
default:
    FileHandle.standardError.write(Data("unknown benchmark \(arguments[2])\n".utf8))
    exit(64)
}

/// Opens a loopback listener that accepts connections (through the kernel's backlog) and never
/// answers, for the life of the process; returns its port.
func silentListener() -> UInt16 {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    listen(listener, 128)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
    }
    return UInt16(bigEndian: address.sin_port)
}

/// Why the benchmark could not run.
struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
