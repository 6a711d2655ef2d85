internal import CBASystem
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A warm `ba-extension-runner` (zygote) that forks one child per call, so a call costs a fork
/// instead of an exec, and a Swift extension finds Foundation and BackgroundAssets already loaded.
///
/// Started in the background by the first call that wants it (that call and any before it is
/// ready are spawned as usual), on a thread of its own that lives as long as the zygote: the
/// zygote's parent-death signal is tied to that thread. Restarted when it dies; after three
/// failed starts in a row, calls are spawned. The zygote exits when this object goes (its control
/// socket closes) or when the host process dies.
final class WarmRunner: @unchecked Sendable {
    /// The control socket of a ready zygote. Closed when the last call using it lets go.
    final class Control: @unchecked Sendable {
        let fd: Int32
        let pid: pid_t
        init(fd: Int32, pid: pid_t) {
            self.fd = fd
            self.pid = pid
        }
        deinit { close(fd) }
    }

    private let runnerPath: String
    private let lock = NSLock()
    // Guarded by `lock`.
    private var control: Control?
    private var starting = false
    private var failedStarts = 0

    static let maximumFailedStarts = 3
    static let readyTimeoutMilliseconds: Int32 = 10_000

    init(runnerPath: String) { self.runnerPath = runnerPath }

    deinit {
        // Let the zygote see the end of its control socket (calls in flight keep it open).
        lock.withLock { control = nil }
    }

    /// The ready zygote, or nil (then one is started in the background, unless starts keep failing).
    func ready() -> Control? {
        lock.withLock {
            if let control { return control }
            if !starting && failedStarts < Self.maximumFailedStarts {
                starting = true
                let thread = Thread { [weak self, runnerPath] in
                    Self.runZygote(runnerPath: runnerPath) { [weak self] in self }
                    _ = self  // captured weakly: the zygote must not keep its owner alive
                }
                thread.name = "ba-extension-zygote"
                thread.start()
            }
            return nil
        }
    }

    /// Forgets `dead` (its requests failed): the next call starts another.
    func discard(_ dead: Control) {
        lock.withLock { if control === dead { control = nil } }
    }

    private func finishedStarting(_ control: Control?) {
        lock.withLock {
            starting = false
            self.control = control
            failedStarts = control == nil ? failedStarts + 1 : 0
        }
    }

    /// Spawns the zygote, waits for its ready message, then waits for it to exit: this thread is
    /// its parent for its whole life.
    private static func runZygote(runnerPath: String, owner: () -> WarmRunner?) {
        var pair: [Int32] = [-1, -1]
        guard ba_sys_seqpacket_pair_cloexec(&pair) == 0 else {
            owner()?.finishedStarting(nil)
            return
        }
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        let argv = [runnerPath, BA_RUNNER_ARG_ZYGOTE, String(getpid())]
        let envp = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let status = SupervisedCall.withCStrings(argv) { argvPointer in
            SupervisedCall.withCStrings(envp) { envPointer in
                ba_sys_spawn(runnerPath, argvPointer, envPointer, pair[1], null, &pid)
            }
        }
        close(pair[1])
        if null >= 0 { close(null) }
        guard status == 0 else {
            close(pair[0])
            owner()?.finishedStarting(nil)
            return
        }
        var ready = pollfd(fd: pair[0], events: Int16(POLLIN), revents: 0)
        var word: Int32 = -1
        if poll(&ready, 1, readyTimeoutMilliseconds) == 1 {
            _ = read(pair[0], &word, MemoryLayout<Int32>.size)
        }
        if word == 0 {
            var control: Control? = Control(fd: pair[0], pid: pid)
            owner()?.finishedStarting(control)
            // Held weakly from here: when the owner goes, the last call lets go of the control
            // socket, it closes, and the zygote exits.
            weak let watched = control
            control = nil
            reap(pid)
            if let watched { owner()?.discard(watched) }
        } else {
            close(pair[0])
            if pid > 0 { kill(pid, SIGKILL) }
            reap(pid)
            owner()?.finishedStarting(nil)
        }
    }

    private static func reap(_ pid: pid_t) {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}
