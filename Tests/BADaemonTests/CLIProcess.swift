import BATestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A `ba` command running as a real process while a test watches its output (for `ba events
/// --follow`, which runs until signalled). Every wait is bounded; ``kill()`` (in a `defer`)
/// SIGKILLs it if it still runs.
final class CLIProcess: @unchecked Sendable {
    let process = Process()
    private let output = LockedData()
    private let errors = LockedData()
    private let exited = DispatchSemaphore(value: 0)
    private let drained = DispatchGroup()

    /// Starts `ba arguments…`.
    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: BuildProducts.executable("ba"))
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        for (pipe, buffer) in [(out, output), (err, errors)] {
            let handle = pipe.fileHandleForReading
            drained.enter()
            Thread { [drained] in
                while true {
                    let data = handle.availableData
                    if data.isEmpty { break }
                    buffer.withLock { $0.append(data) }
                }
                drained.leave()
            }.start()
        }
    }

    var stdout: String { output.withLock { String(decoding: $0, as: UTF8.self) } }
    var stderr: String { errors.withLock { String(decoding: $0, as: UTF8.self) } }

    /// The complete lines of stdout so far, parsed as JSON objects (lines that are not are skipped).
    var jsonLines: [[String: Any]] {
        let text = stdout
        let complete = text.hasSuffix("\n") ? text : String(text[..<(text.lastIndex(of: "\n") ?? text.startIndex)])
        return complete.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    /// Polls `condition` until it holds; throws after `timeout` seconds, or if the process exits first.
    func wait(_ what: String, timeout: Double = 30, until condition: (CLIProcess) -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !condition(self) {
            guard process.isRunning else {
                throw HarnessError("ba exited (\(process.terminationStatus)) before \(what): \(stdout)\(stderr)")
            }
            guard Date() < deadline else { throw HarnessError("timed out waiting for \(what): \(stdout)\(stderr)") }
            usleep(2000)
        }
    }

    func send(_ signal: Int32) { Glibc.kill(process.processIdentifier, signal) }

    /// Waits for the exit and for both pipes to be read to the end; the exit status, or nil after `timeout`.
    func waitForExit(timeout: Double = 30) -> Int32? {
        guard exited.wait(timeout: .now() + timeout) == .success else { return nil }
        exited.signal()
        _ = drained.wait(timeout: .now() + timeout)
        return process.terminationStatus
    }

    /// SIGKILLs it if it still runs.
    func kill() {
        if process.isRunning { send(SIGKILL) }
        _ = waitForExit(timeout: 10)
    }
}

/// Polls `condition` every 2 ms until it holds or `timeout` seconds pass; whether it held.
func eventually(timeout: Double = 30, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    while Date() < deadline {
        if try condition() { return true }
        usleep(2000)
    }
    return try condition()
}
