import Foundation

/// A finished file basd keeps track of so that it can purge it under disk pressure while it is
/// unmodified: one row of the `asset` table. The identity (device, inode, size, mtime) is the
/// file's when it finished; an app that moves the file within its app group container keeps the
/// inode, which is how basd finds it again.
public struct StoredAsset: Sendable, Hashable {
    public var downloadUniqueIdentifier: String
    public var appIdentifier: String
    /// The download's identifier.
    public var identifier: String
    /// Where basd delivered the file.
    public var deliveredPath: String
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    /// Modification time in nanoseconds since the epoch.
    public var modificationTimeNanoseconds: Int64
    public var sha256: String
    public var finishedAt: Date

    public init(
        downloadUniqueIdentifier: String, appIdentifier: String, identifier: String, deliveredPath: String,
        device: UInt64, inode: UInt64, size: Int64, modificationTimeNanoseconds: Int64, sha256: String,
        finishedAt: Date
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
    }
}
