// basd at scale, measured as an app sees it (release build; Benchmarks/basd.sh runs it):
//   small  BASE N     N x 16 KiB (BASE/small/fNNNNN.bin) scheduled one by one through
//                     BADownloadManager, until the last finished delegate callback; prints seconds
//                     and basd's CPU seconds.
//   queue  N          N downloads scheduled one by one (to a server that never answers), then
//                     fetchCurrentDownloads; prints the rate, the listing's latency, basd's RSS
//                     and open descriptors.
//   idle   SECONDS    basd with one registered app and nothing due: its wake-ups (context
//                     switches) per second and RSS.
// Each starts its own basd (BUILD_DIR/basd) in a temporary state folder and ends it.
// Usage: BasdBenchmark BUILD_DIR small BASE N | queue N | idle SECONDS
import BADaemonProtocol
import BackgroundAssets
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(
        Data("usage: BasdBenchmark BUILD_DIR small BASE N | queue N | idle SECONDS\n".utf8))
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

    init() throws {
        directory = NSTemporaryDirectory() + "ba-bench-basd-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        socketPath = directory + "/basd.sock"
        process.executableURL = URL(fileURLWithPath: build + "/basd")
        process.arguments = ["--state-dir", directory + "/state", "--socket", socketPath]
        let errors = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = errors
        process.standardOutput = Pipe()
        try process.run()
        for _ in 0..<500 where !FileManager.default.fileExists(atPath: socketPath) { usleep(10_000) }
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

func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

func download(_ identifier: String, _ url: String) -> BAURLDownload {
    BAURLDownload(
        identifier: identifier, request: URLRequest(url: URL(string: url)!), fileSize: 0,
        applicationGroupIdentifier: group)
}

let basd = try Basd()
defer { basd.stop() }
let manager = BADownloadManager.shared
manager.baConfigure(bundleIdentifier: app, socketPath: basd.socketPath)

switch arguments[2] {
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
    let port = UInt16(bigEndian: address.sin_port)
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
default:
    FileHandle.standardError.write(Data("unknown benchmark \(arguments[2])\n".utf8))
    exit(64)
}
