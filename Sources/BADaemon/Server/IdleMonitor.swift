import BACore
import Foundation
import NIOCore

/// Exits a socket-activated basd that has been idle for a while (`--exit-when-idle`): it looks at
/// what the services have to do (``BasdServices/idleActivity()``) on the executor, applies
/// ``IdleExit`` and, once basd has been idle long enough, stops accepting connections and asks the
/// server to shut down (``DaemonServer/run()`` then finishes it, and basd exits 0).
///
/// No client is turned away: the look, the accepting of connections and the close of the
/// listening channel all run on the executor's one thread, and a connection is counted from the
/// moment it is accepted, so a client either was accepted before the look (basd is busy, it
/// stays) or waits in the socket's backlog, which systemd keeps (it holds the socket), and
/// systemd starts basd again for it.
final class IdleMonitor: @unchecked Sendable {
    private let executor: ServiceExecutor
    private let activity: () -> IdleExit.Activity
    private let now: () -> Date
    private let exit: (_ idleFor: TimeInterval) -> Void
    private let log: @Sendable (String) -> Void
    private var rule: IdleExit
    private var timer: Scheduled<Void>?
    private var stopped = false

    init(
        rule: IdleExit, executor: ServiceExecutor, activity: @escaping () -> IdleExit.Activity,
        now: @escaping () -> Date, log: @escaping @Sendable (String) -> Void,
        exit: @escaping (_ idleFor: TimeInterval) -> Void
    ) {
        self.rule = rule
        self.executor = executor
        self.activity = activity
        self.now = now
        self.log = log
        self.exit = exit
    }

    /// Looks for the first time one timeout from now (executor).
    func start() {
        executor.assertOnExecutor()
        log(
            "idle exit: basd exits after \(Self.text(rule.timeout)) with nothing to do; its socket and basd.timer start it again"
        )
        arm(after: rule.timeout)
    }

    /// No more looks (executor).
    func stop() {
        stopped = true
        timer?.cancel()
        timer = nil
    }

    private static func text(_ seconds: TimeInterval) -> String {
        LogDuration.text(.milliseconds(Int64((seconds * 1000).rounded())))
    }

    private func arm(after seconds: TimeInterval) {
        guard !stopped else { return }
        timer = executor.after(.milliseconds(Int64((seconds * 1000).rounded(.up)))) { [weak self] in
            self?.look()
        }
    }

    private func look() {
        guard !stopped else { return }
        timer = nil
        switch rule.look(activity(), now: now()) {
        case .lookAgain(let seconds):
            arm(after: seconds)
        case .exit(let idle):
            stopped = true
            log(
                "idle exit: nothing to do for \(Self.text(idle)): exiting (socket activation starts basd again for the next client, basd.timer for what is due)"
            )
            exit(idle)
        }
    }
}
