import Foundation

/// What a purge would do: every tracked asset with its status and a reason, which files to
/// delete, and the totals. Made by ``PurgePlanner/plan(assets:roots:freeBytes:thresholdBytes:)``,
/// carried out by ``Purger/execute(_:)``.
package struct PurgePlan: Sendable, Equatable {
    /// One tracked asset in the plan.
    package struct Entry: Sendable, Equatable {
        /// The record.
        package var asset: TrackedAsset
        /// What it is now.
        package var status: AssetStatus
        /// Where it is now, when it was found (also for a modified or in-use file).
        package var path: String?
        /// Its size now when found, else the recorded size.
        package var size: Int64
        /// Why it is deleted or kept, for a person: "purgeable: unmodified since it finished
        /// 2026-11-20, last used 2026-11-21", "kept: modified (size 10 → 12)", "kept: open by pid
        /// 1234", "kept: not yet delivered to the app", "kept: the app has not launched yet", "gone: no
        /// longer in the app group container".
        package var reason: String
        /// Whether the plan deletes it.
        package var willDelete: Bool

        /// Creates an entry.
        package init(
            asset: TrackedAsset, status: AssetStatus, path: String?, size: Int64, reason: String, willDelete: Bool
        ) {
            self.asset = asset
            self.status = status
            self.path = path
            self.size = size
            self.reason = reason
            self.willDelete = willDelete
        }
    }

    /// Every asset given to the planner, in the order given.
    package var entries: [Entry]
    /// The free space the plan started from (bytes available to unprivileged users).
    package var freeBytes: Int64
    /// The free space a purge restores.
    package var thresholdBytes: Int64
    /// `thresholdBytes - freeBytes`, or 0 when there is enough free space already.
    package var bytesNeeded: Int64
    /// The bytes the planned deletions free (may fall short of ``bytesNeeded`` when too little is
    /// purgeable, or pass it by the last file's size).
    package var plannedBytes: Int64
    /// The bytes of every purgeable asset, planned or not.
    package var purgeableBytes: Int64
    /// True when the container walk stopped at its bound: some "missing" assets may just not
    /// have been reached.
    package var scanTruncated: Bool
    /// The entries to delete, in the order to delete them: least recently used first.
    package var deletions: [Entry]

    /// Creates a plan.
    package init(
        entries: [Entry], freeBytes: Int64, thresholdBytes: Int64, bytesNeeded: Int64, plannedBytes: Int64,
        purgeableBytes: Int64, scanTruncated: Bool, deletions: [Entry]
    ) {
        self.entries = entries
        self.freeBytes = freeBytes
        self.thresholdBytes = thresholdBytes
        self.bytesNeeded = bytesNeeded
        self.plannedBytes = plannedBytes
        self.purgeableBytes = purgeableBytes
        self.scanTruncated = scanTruncated
        self.deletions = deletions
    }
}
