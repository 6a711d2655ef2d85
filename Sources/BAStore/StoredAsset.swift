import Foundation

/// A finished file basd keeps track of so that it can purge it under disk pressure while it is
/// unmodified: one row of the `asset` table. The identity (device, inode, size, mtime) is the
/// file's when it finished; an app that moves the file within its app group container keeps the
/// inode, which is how basd finds it again.
package struct StoredAsset: Sendable, Hashable {
    package var downloadUniqueIdentifier: String
    package var appIdentifier: String
    /// The download's identifier.
    package var identifier: String
    /// Where basd delivered the file.
    package var deliveredPath: String
    package var device: UInt64
    package var inode: UInt64
    package var size: Int64
    /// Modification time in nanoseconds since the epoch.
    package var modificationTimeNanoseconds: Int64
    package var sha256: String
    package var finishedAt: Date
    /// Why the file is kept until the app's next launch (the raw value of BAPurge's `LaunchHold`:
    /// `firstLaunch`, `essential`), or nil for the usual purge rules. The app's next launch clears
    /// it (``BAStore/markLaunched(app:)``).
    package var heldUntilLaunch: String?

    package init(
        downloadUniqueIdentifier: String, appIdentifier: String, identifier: String, deliveredPath: String,
        device: UInt64, inode: UInt64, size: Int64, modificationTimeNanoseconds: Int64, sha256: String,
        finishedAt: Date, heldUntilLaunch: String? = nil
    ) {
        self.downloadUniqueIdentifier = downloadUniqueIdentifier
        self.appIdentifier = appIdentifier
        self.identifier = identifier
        self.deliveredPath = deliveredPath
        self.device = device
        self.inode = inode
        self.size = size
        self.modificationTimeNanoseconds = modificationTimeNanoseconds
        self.sha256 = sha256
        self.finishedAt = finishedAt
        self.heldUntilLaunch = heldUntilLaunch
    }
}
