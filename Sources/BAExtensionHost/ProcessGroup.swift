import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Ending a runner's process group for good.
enum ProcessGroup {
    /// Longest wait for killed members to disappear.
    static let settleLimit = Duration.seconds(2)

    /// Sends SIGKILL to every process in group `pgid`, then waits (bounded by ``settleLimit``)
    /// until none is alive. A killed orphan stays a zombie until init reaps it; zombies hold no
    /// resources and are not waited for. In the common case (the runner exited and was alone)
    /// `kill` reports ESRCH at once and nothing is scanned.
    static func kill(_ pgid: pid_t) {
        // Never 0 or less: `kill(0, …)` would hit the caller's own process group (basd, or a test
        // runner and everything it started).
        guard pgid > 0, Glibc.kill(-pgid, SIGKILL) == 0 else { return }
        let clock = ContinuousClock()
        let limit = clock.now + settleLimit
        var pause = Duration.microseconds(200)
        while liveMembers(of: pgid) > 0 && clock.now < limit {
            // Bounded wait for the kernel to finish the kills: SIGKILL is not synchronous.
            Thread.sleep(forTimeInterval: Double(pause.components.attoseconds) / 1e18)
            pause = min(pause * 2, .milliseconds(20))
        }
    }

    /// How many processes of group `pgid` are alive (not zombies), from /proc.
    static func liveMembers(of pgid: pid_t) -> Int {
        guard Glibc.kill(-pgid, 0) == 0 else { return 0 }
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return 0 }
        var count = 0
        for entry in entries where entry.first?.isNumber == true {
            guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // Fields after the command name: state ppid pgrp …
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 2, let group = pid_t(fields[2]), group == pgid else { continue }
            if fields[0] != "Z" && fields[0] != "X" { count += 1 }
        }
        return count
    }
}
