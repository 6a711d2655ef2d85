// The `responsive` mode of BasdBenchmark (issue 33): while an app's extension returns N downloads
// at its install, another client asks basd for its `status` again and again; how long the worst
// answer took is how long basd stalled everyone else for this install.
import BADaemonProtocol
import Foundation
import Synchronization

/// `status` asked in a loop on a connection and a thread of its own until stopped: when each
/// answer was asked (seconds after `origin`) and how long it took (milliseconds).
final class StatusLoop: @unchecked Sendable {
    struct Sample {
        var at: Double
        var milliseconds: Double
    }

    private let lock = NSLock()
    private var samples: [Sample] = []
    private var failure: String?
    private let stopped = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(socketPath: String, origin: ContinuousClock.Instant) throws {
        let client = try DaemonClient(socketPath: socketPath, client: ClientInfo(role: .cli, pid: getpid()))
        Thread { [self] in
            defer {
                client.close()
                done.signal()
            }
            while !stopped.load(ordering: .acquiring) {
                let start = ContinuousClock.now
                do {
                    _ = try client.call(.status)
                } catch {
                    lock.withLock { failure = "\(error)" }
                    return
                }
                let sample = Sample(
                    at: seconds(from: origin, to: start), milliseconds: seconds(from: start, to: .now) * 1000)
                lock.withLock { samples.append(sample) }
            }
        }.start()
    }

    /// Stops asking; every answer, or why one failed.
    func stop() -> Result<[Sample], BenchmarkError> {
        stopped.store(true, ordering: .releasing)
        _ = done.wait(timeout: .now() + 30)
        return lock.withLock {
            if let failure { return .failure(BenchmarkError("status failed: \(failure)")) }
            return .success(samples)
        }
    }
}

/// Runs the `responsive` benchmark against `basd`: `ba install --no-wait` (BUILD_DIR's, a process
/// of its own) of an app whose extension `library` (Benchmarks/BenchExtension) returns the `count`
/// downloads of `manifestURL`, with another client asking `status` in a loop; prints one line (the worst answer during the install, and
/// the slow ones) and returns the exit status.
func runResponsiveBenchmark(basd: Basd, manifestURL: String, count: Int, library: String) -> Int32 {
    let app = "com.example.bench.responsive"
    let group = "group.com.example.bench.responsive"
    let appDirectory = basd.directory + "/app"
    // No event observer here: `ba install` follows the events itself, and decoding thousands of
    // them in this process (an essential set's `began` events) made this process's status loop
    // wait for a CPU for up to 2 s while basd's executor never waited more than 30 ms.
    do {
        try writeBenchApp(
            at: appDirectory, bundleIdentifier: app, group: group, library: library, manifestURL: manifestURL)
    } catch {
        print("responsive: cannot set up: \(error)")
        return 1
    }
    let start = ContinuousClock.now
    let loop: StatusLoop
    do {
        loop = try StatusLoop(socketPath: basd.socketPath, origin: start)
    } catch {
        print("responsive: cannot connect the status client: \(error)")
        return 1
    }
    let cpuBefore = basd.cpuSeconds
    // `ba install` in a process of its own (as a user runs it): decoding the install's report
    // does not compete with this process's status loop for its CPU time.
    let install = Process()
    install.executableURL = URL(fileURLWithPath: build + "/ba")
    install.arguments = ["install", appDirectory, "--no-wait", "--json", "--socket", basd.socketPath]
    let output = Pipe()
    install.standardOutput = output
    install.standardError = FileHandle(forWritingAtPath: "/dev/null")
    do { try install.run() } catch {
        _ = loop.stop()
        print("responsive: cannot run ba install: \(error)")
        return 1
    }
    let reported = output.fileHandleForReading.readDataToEndOfFile()
    install.waitUntilExit()
    let installed = seconds(since: start)
    let cpu = basd.cpuSeconds - cpuBefore
    let samples: [StatusLoop.Sample]
    switch loop.stop() {
    case .success(let all): samples = all
    case .failure(let error):
        print("responsive: \(error)")
        return 1
    }
    let text = String(decoding: reported, as: UTF8.self)
    guard install.terminationStatus == 0, text.contains("\"scheduled\"") else {
        print("responsive: ba install failed (\(install.terminationStatus)): \(text.prefix(2_000))")
        return 1
    }
    let sorted = samples.map(\.milliseconds).sorted()
    let worst = samples.max { $0.milliseconds < $1.milliseconds }
    let slow = samples.filter { $0.milliseconds >= 50 }.map {
        String(format: "%.0f ms at %.3f s", $0.milliseconds, $0.at)
    }
    print(
        String(
            format:
                "responsive %d: ba install %.3f s, basd CPU %.3f s; %d status answers, worst %.1f ms (asked %.3f s after the install began), median %.2f ms, p99 %.1f ms; at least 50 ms: ",
            count, installed, cpu, samples.count,
            worst?.milliseconds ?? 0, worst?.at ?? 0, sorted.isEmpty ? 0 : sorted[sorted.count / 2],
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * 99 / 100)])
            + (slow.isEmpty ? "none" : slow.joined(separator: ", ")))
    return 0
}
