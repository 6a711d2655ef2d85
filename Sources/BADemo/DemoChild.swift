import BACommands
internal import CBASystem
import Dispatch
import Foundation
import Synchronization

/// A child process of `ba demo` (basd, `ba install`, the sample app): started tied to `ba`, waited
/// for with a deadline, stopped with SIGTERM and, if it does not go, SIGKILL.
///
/// Tied to `ba`: it gets SIGTERM from the kernel when `ba` dies in any way, SIGKILL included
/// (PR_SET_PDEATHSIG), so no basd is left running on a deleted folder. `prctl` must run in the
/// child before exec, which posix_spawn (and so Foundation's `Process`) cannot do; the other
/// options were an environment variable every child honours (basd and the sample app would carry
/// demo-only code, and a grandchild could inherit it) or an exec wrapper (one more product to
/// build and find). A fork in C that makes only async-signal-safe calls before exec is the
/// smallest sound one: `ba_sys_spawn_tied_to_parent`.
///
/// It runs in its own process group, so a terminal's Ctrl-C reaches `ba` alone, which stops the
/// children in order: the app, then basd. (On a terminal with `stty tostop`, a child writing to it
/// from that background group would be stopped; the default terminal settings do not do that.)
final class DemoChild: Sendable {
    let pid: pid_t
    private let status = Mutex<Int32?>(nil)
    /// Signalled once when the process is reaped (and re-signalled by every successful wait).
    private let exited = DispatchSemaphore(value: 0)

    /// Starts `path` with `arguments`; `environment` is added to this process's. Standard output
    /// and error are this process's unless other descriptors are given (they stay open here).
    init(
        _ path: String, _ arguments: [String], environment: [String: String] = [:], output: Int32 = 1,
        error: Int32 = 2
    ) async throws {
        let argv = [path] + arguments
        let envp = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0)=\($1)" }
        let spawned = await ParentThread.shared.run { () -> Result<pid_t, DemoFailure> in
            let cArguments = argv.map { strdup($0) } + [nil]
            let cEnvironment = envp.map { strdup($0) } + [nil]
            defer { (cArguments + cEnvironment).forEach { free($0) } }
            var pid: pid_t = 0
            let code = ba_sys_spawn_tied_to_parent(path, cArguments, cEnvironment, output, error, SIGTERM, &pid)
            guard code == 0 else {
                return .failure(DemoFailure(message: "cannot start \(path): \(String(cString: strerror(code)))"))
            }
            return .success(pid)
        }
        pid = try spawned.get()
        // Reaped by its own thread: waitpid for this pid only, so no other wait in the process is disturbed.
        Thread { [self] in
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
            // The wait(2) status: a normal exit has the low 7 bits clear and the code above them.
            let signal = raw & 0x7f
            status.withLock { $0 = signal == 0 ? (raw >> 8) & 0xff : 128 + signal }
            exited.signal()
        }.start()
    }

    var isRunning: Bool { status.withLock { $0 == nil } }

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
        return status.withLock { $0 }
    }

    /// SIGTERM to its process group, then SIGKILL after 10 s.
    func stop() async {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                self.stopBlocking()
                continuation.resume()
            }
        }
    }

    func stopBlocking() {
        guard isRunning else { return }
        kill(-pid, SIGTERM)
        if waitBlocking(seconds: 10) == nil {
            kill(-pid, SIGKILL)
            _ = waitBlocking(seconds: 5)
        }
    }
}

/// The thread every child of the demo is started from. The kernel sends the parent-death signal
/// when the *thread* that forked the child ends, not the process; Dispatch's and the concurrency
/// pool's threads end after a few idle seconds, which would SIGTERM basd in the middle of the demo.
/// This thread never ends.
final class ParentThread: Sendable {
    static let shared = ParentThread()

    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let queued = DispatchSemaphore(value: 0)

    private init() {
        Thread { [self] in
            while true {
                queued.wait()
                let job = jobs.withLock { $0.removeFirst() }
                job()
            }
        }.start()
    }

    /// Runs `body` on the thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            jobs.withLock { $0.append { continuation.resume(returning: body()) } }
            queued.signal()
        }
    }
}
