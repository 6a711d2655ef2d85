import Foundation

/// Makes the store's commits durable on a thread of its own: the writer commits with
/// `synchronous = NORMAL` (into the `-wal` file, which survives a `kill -9` at once), and this
/// thread fsyncs the `-wal` file after commits, so a power loss loses at most the commits of the
/// last few milliseconds (``gatherInterval`` plus an fsync) instead of costing every caller an
/// fsync on the calling thread (`docs/state.md`, "Durability").
///
/// Commits that arrive within ``gatherInterval`` of the first, or while an fsync runs, share one
/// fsync: a burst of commits costs a few fsyncs, not one each. ``waitUntilSynced()`` waits for the commits made so far.
final class LogSync: @unchecked Sendable {
    // Guarded by `condition`.
    private var committedCount: UInt64 = 0
    private var syncedCount: UInt64 = 0
    private var failures: UInt64 = 0
    private var stopping = false
    /// The thread waits for a first commit (not gathering, not syncing): only then does a commit
    /// wake it, so a burst of commits costs one wake-up, not one each.
    private var idle = false

    /// How long the thread gathers commits after the first before it fsyncs: the power-loss
    /// window is this plus an fsync.
    static let gatherInterval: TimeInterval = 0.005

    private let walPath: String
    private let condition = NSCondition()
    private let log: @Sendable (String) -> Void

    init(databasePath: String, log: @escaping @Sendable (String) -> Void) {
        self.walPath = databasePath + "-wal"
        self.log = log
        let thread = Thread { [self] in run() }
        thread.name = "basd-log-sync"
        thread.start()
    }

    /// A transaction was committed: sync it soon.
    func committed() {
        condition.lock()
        committedCount += 1
        if idle { condition.signal() }
        condition.unlock()
    }

    /// Commits so far, and those synced.
    var counts: (committed: UInt64, synced: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        return (committedCount, syncedCount)
    }

    /// Blocks until every commit made before the call is synced (or the syncer stopped).
    func waitUntilSynced() {
        condition.lock()
        defer { condition.unlock() }
        let target = committedCount
        while syncedCount < target && !stopping { condition.wait() }
    }

    /// Stops the thread after a last sync of what was committed.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            idle = true
            while committedCount == syncedCount && !stopping { condition.wait() }
            idle = false
            // Gather the commits that follow closely (a batch of schedules, an engine turn's
            // events): one fsync for them, not one each.
            let deadline = Date(timeIntervalSinceNow: Self.gatherInterval)
            while !stopping && condition.wait(until: deadline) {}  // woken only by stop()
            let target = committedCount
            let last = stopping
            let needed = target != syncedCount
            condition.unlock()
            if needed { sync(through: target) }
            if last { return }
        }
    }

    /// fsyncs the `-wal` file (opened anew: SQLite may have removed and created it since), then
    /// marks the commits through `target` synced. A missing file has nothing unsynced: the last
    /// connection checkpointed it into the database (fsynced) and removed it.
    private func sync(through target: UInt64) {
        let fd = open(walPath, O_RDONLY | O_CLOEXEC)
        var failure: String?
        if fd >= 0 {
            if fdatasync(fd) != 0 { failure = String(cString: strerror(errno)) }
            close(fd)
        }
        condition.lock()
        syncedCount = max(syncedCount, target)
        if failure != nil { failures += 1 }
        let failureCount = failures
        condition.broadcast()
        condition.unlock()
        // Once, then every 1,000th: a failing disk must not flood the log.
        if let failure, failureCount == 1 || failureCount % 1_000 == 0 {
            log(
                "fsync of \(walPath) failed (\(failureCount) time(s)): \(failure); the last commits may not survive a power loss"
            )
        }
    }
}
