import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Another process holding the `flock` on a lock file, as an app or extension inside
/// `withExclusiveControl` does: util-linux `flock --no-fork PATH sleep 120` (scripts/install-deps.sh),
/// so the spawned pid is the holder. ``release()`` SIGKILLs it, which frees the lock; so does the
/// end of the test process at the latest (the sleep is bounded too).
package final class LockHoldingProcess: @unchecked Sendable {
    private let child: ChildProcess
    /// The holder's pid, as `/proc/locks` and `ba lock status` name it.
    package var pid: Int32 { child.pid }

    /// Starts the holder; it takes the lock shortly after (wait for it where it matters).
    package init(path: String) throws {
        child = try ChildProcess("/usr/bin/env", ["flock", "--no-fork", path, "sleep", "120"])
    }

    /// Kills the holder and waits for it: the lock is free when this returns. Safe to call twice.
    package func release() {
        if child.isRunning { child.signal(SIGKILL) }
        _ = child.waitForExit(timeout: nil, readingToTheEnd: false)
    }

    deinit { release() }
}
