// The `extension` mode of BasdBenchmark: an app installed and never launched, whose extension
// returns N downloads, until basd recorded the N finished events and until the N-th call reached
// the extension.
import BADaemonProtocol
import Foundation

/// Counts one app's finished and failed events on basd's CLI event stream (what `ba events
/// --follow` sees: basd pushes each event once it is stored), with when the last one arrived.
final class EventTally: @unchecked Sendable {
    let app: String
    private let condition = NSCondition()
    private var finished = 0
    private var failed = 0
    private var lastArrival: ContinuousClock.Instant?
    private var lastArrivalDate: Date?

    init(app: String) { self.app = app }

    /// Called on the client's reader thread for every pushed event.
    func receive(_ event: DownloadEvent) {
        guard event.appIdentifier == app, event.kind == .finished || event.kind == .failed else { return }
        let now = ContinuousClock.now
        let date = Date()
        condition.withLock {
            if event.kind == .finished { finished += 1 } else { failed += 1 }
            lastArrival = now
            lastArrivalDate = date
            condition.broadcast()
        }
    }

    /// Waits until `count` events arrived or `deadline` passed; returns the counts so far and
    /// when the last arrived (also as a wall-clock date).
    func wait(
        for count: Int, until deadline: Date
    ) -> (finished: Int, failed: Int, last: ContinuousClock.Instant?, lastDate: Date?) {
        condition.withLock {
            while finished + failed < count, condition.wait(until: deadline) {}
            return (finished, failed, lastArrival, lastArrivalDate)
        }
    }
}

/// Counts the lines of files that only grow (the extension appends `IDENTIFIER\n` per call),
/// reading only what was appended since the last look.
struct AppendedLines {
    let paths: [String]
    private var offsets: [off_t]
    private(set) var count = 0

    init(paths: [String]) {
        self.paths = paths
        offsets = Array(repeating: 0, count: paths.count)
    }

    mutating func update() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        for (index, path) in paths.enumerated() {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }  // not written yet
            defer { close(fd) }
            while true {
                let got = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offsets[index]) }
                guard got > 0 else { break }
                count += buffer[0..<got].reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
                offsets[index] += off_t(got)
            }
        }
    }

    /// The distinct lines of all the files (a call delivered twice appends its identifier twice).
    func distinctLines() -> Int {
        var lines = Set<Substring>()
        for path in paths {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") { lines.insert(line) }
        }
        return lines.count
    }
}

/// Writes the app directory: `Info.plist` and the extension library in `lib/`.
func writeBenchApp(
    at directory: String, bundleIdentifier: String, group: String, library: String, manifestURL: String
) throws {
    let lib = directory + "/lib"
    try FileManager.default.createDirectory(atPath: lib, withIntermediateDirectories: true)
    try FileManager.default.copyItem(atPath: library, toPath: lib + "/libBenchExtension.so")
    let plist: [String: Any] = [
        "CFBundleIdentifier": bundleIdentifier, "CFBundleShortVersionString": "1.0", "BAAppGroupID": group,
        "BAExtensionPath": "lib/libBenchExtension.so", "BAManifestURL": manifestURL,
    ]
    try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
        .write(to: URL(fileURLWithPath: directory + "/Info.plist"))
}

/// Runs the `extension` benchmark against `basd`; prints one line and returns the exit status.
func runExtensionBenchmark(basd: Basd, manifestURL: String, count: Int, library: String, timeout: Double) -> Int32 {
    let app = "com.example.bench.extension"
    let group = "group.com.example.bench.extension"
    let appDirectory = basd.directory + "/app"
    let container = basd.directory + "/state/groups/" + group
    let tally = EventTally(app: app)
    let observer: DaemonClient
    let installer: DaemonClient
    do {
        try writeBenchApp(
            at: appDirectory, bundleIdentifier: app, group: group, library: library, manifestURL: manifestURL)
        observer = try DaemonClient(
            socketPath: basd.socketPath, client: ClientInfo(role: .cli, pid: getpid()),
            onEvent: { tally.receive($0) })
        try observer.call(.subscribeEvents)
        installer = try DaemonClient(socketPath: basd.socketPath, client: ClientInfo(role: .cli, pid: getpid()))
    } catch {
        print("extension: cannot set up: \(error)")
        return 1
    }
    defer {
        observer.close()
        installer.close()
    }

    let cpuBefore = basd.cpuSeconds
    let start = ContinuousClock.now
    let deadline = Date(timeIntervalSinceNow: timeout)
    let report: ExtensionRunReport
    do {
        guard case .extensionRun(let run) = try installer.call(.installApp(InstallRequest(appDirectory: appDirectory)))
        else {
            print("extension: basd answered installApp with something else than a report")
            return 1
        }
        report = run
    } catch {
        print("extension: the install failed: \(error)")
        return 1
    }
    let installed = seconds(since: start)
    guard report.verdict == "ok", report.scheduled.count == count else {
        let refusal = report.refused.first.map { "; first refused: \($0.identifier): \($0.reason) (\($0.code))" } ?? ""
        print(
            "extension: the install did not schedule \(count) downloads: verdict \(report.verdict ?? "none") "
                + "\(report.detail ?? report.skipped ?? report.manifestError ?? ""), \(report.scheduled.count) scheduled, "
                + "\(report.refused.count) refused\(refusal); logs: \(report.logs.joined(separator: " | "))")
        return 1
    }

    var delivered = AppendedLines(paths: [container + "/bench-finished.log", container + "/bench-failed.log"])
    let recorded = tally.wait(for: count, until: deadline)
    guard recorded.finished + recorded.failed >= count, let last = recorded.last, let lastDate = recorded.lastDate
    else {
        delivered.update()
        print(
            String(
                format:
                    "extension %d: timed out after %.0f s with %d finished and %d failed events recorded, %d calls delivered to the extension",
                count, timeout, recorded.finished, recorded.failed, delivered.count))
        return 1
    }
    let cpuRecorded = basd.cpuSeconds - cpuBefore
    let recordedSeconds = seconds(from: start, to: last)
    // From the moment the extension returned its set (its log line says when, in wall-clock time).
    guard let returned = report.logs.lazy.compactMap(returnedAt).first else {
        print("extension: the install's report has no BenchExtension line saying when: \(report.logs)")
        return 1
    }
    let fromReturned = lastDate.timeIntervalSince1970 - returned
    // The extension's file is polled every 10 ms (a line per call; reading only what is new).
    delivered.update()
    while delivered.count < count, Date() < deadline {
        usleep(10_000)
        delivered.update()
    }
    let deliveredSeconds = seconds(since: start)
    let cpuDelivered = basd.cpuSeconds - cpuBefore
    guard delivered.count >= count else {
        print(
            String(
                format:
                    "extension %d: timed out after %.0f s with %d calls delivered to the extension (all %d events recorded after %.3f s)",
                count, timeout, delivered.count, count, recordedSeconds))
        return 1
    }
    print(
        String(
            format:
                "extension %d: install call %.3f s (the extension's %lld ms); %d finished, %d failed recorded %.3f s after the install (%.3f s after the extension returned them, %.3f s after the install's reply); delivered to the extension %.3f s after the install (%d calls, %d distinct); basd CPU %.3f s to recorded (%.3f ms per download), %.3f s to delivered (%.3f ms per download)",
            count, installed, report.durationMilliseconds ?? -1, recorded.finished, recorded.failed,
            recordedSeconds, fromReturned, recordedSeconds - installed, deliveredSeconds, delivered.count,
            delivered.distinctLines(),
            cpuRecorded, cpuRecorded * 1000 / Double(count), cpuDelivered, cpuDelivered * 1000 / Double(count)))
    return 0
}

/// The wall-clock time in BenchExtension's log line `… returned N downloads … at SECONDS.NANOSECONDS`.
func returnedAt(_ line: String) -> Double? {
    guard line.contains("BenchExtension: returned"), let range = line.range(of: " at ", options: .backwards) else {
        return nil
    }
    return Double(line[range.upperBound...].prefix { $0.isNumber || $0 == "." })
}

func seconds(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) -> Double {
    let elapsed = end - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}
