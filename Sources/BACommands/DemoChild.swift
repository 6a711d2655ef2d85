import Dispatch
import Foundation

/// A child process of `ba demo`: started at once, waited for with a deadline, stopped with
/// SIGTERM and, if it does not go, SIGKILL.
final class DemoChild: @unchecked Sendable {
    // @unchecked: `Process` is only started in init; afterwards it is read (`isRunning`,
    // `terminationStatus` after exit, `processIdentifier`), which Foundation allows from any thread.
    private let process = Process()
    /// Signalled once when the process exits (and re-signalled by every successful wait).
    private let exited = DispatchSemaphore(value: 0)

    /// Starts `path` with `arguments`; `environment` is added to this process's. Standard output
    /// and error are this process's unless given.
    init(
        _ path: String, _ arguments: [String], environment: [String: String] = [:], output: FileHandle? = nil,
        error: FileHandle? = nil
    ) throws {
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if let output { process.standardOutput = output }
        if let error { process.standardError = error }
        let exited = exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    /// The exit status (128 + the signal for a killed process), or nil if it still runs after `seconds`.
    func wait(seconds: Double) async -> Int32? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: self.waitBlocking(seconds: seconds))
            }
        }
    }

    private func waitBlocking(seconds: Double) -> Int32? {
        guard exited.wait(timeout: .now() + seconds) == .success else { return nil }
        exited.signal()
        let status = process.terminationStatus
        return process.terminationReason == .uncaughtSignal ? 128 + status : status
    }

    /// SIGTERM, then SIGKILL after 10 s.
    func stop() async {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                self.stopBlocking()
                continuation.resume()
            }
        }
    }

    func stopBlocking() {
        guard process.isRunning else { return }
        kill(pid, SIGTERM)
        if waitBlocking(seconds: 10) == nil {
            kill(pid, SIGKILL)
            _ = waitBlocking(seconds: 5)
        }
    }
}
