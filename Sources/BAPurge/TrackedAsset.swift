import Foundation

/// A finished download as basd recorded it when it delivered the file: who it is for and what
/// the file was then.
///
/// The file's identity (device, inode, size, modification time) is what later tells whether the
/// app still has the file untouched: a rename keeps the device and inode, a copy or a rewrite does
/// not, and any write changes the size or the modification time. The inode's change time is
/// deliberately not recorded: a rename updates it, and apps move their files.
///
/// ```swift
/// let asset = try TrackedAsset(
///     recordingFileAt: deliveredPath, sha256: digest, finishedAt: .now,
///     appID: "com.example.game", downloadUniqueID: download.uniqueID, identifier: "level-1")
/// ```
package struct TrackedAsset: Codable, Sendable, Equatable {
    /// The file's device and inode at delivery.
    package var key: FileKey
    /// Its size in bytes at delivery.
    package var size: Int64
    /// Its modification time at delivery, in nanoseconds since 1970.
    package var modificationTimeNanoseconds: Int64
    /// Its SHA-256 at delivery, lowercase hex. Recorded for the record; not checked by this module.
    package var sha256: String
    /// When the download finished.
    package var finishedAt: Date
    /// The app's bundle identifier.
    package var appID: String
    /// The download's unique identifier.
    package var downloadUniqueID: String
    /// The download's identifier, as the app named it.
    package var identifier: String
    /// Where basd delivered the file: `STATE/transfers/GROUP/finished/UNIQUEID-IDENTIFIER`.
    package var deliveredPath: String
    /// Why the file is kept until the app's next launch, or nil when the usual rules apply
    /// (``LaunchHold/atDelivery(essential:appHasLaunched:)``; a launch releases it).
    package var heldUntilLaunch: LaunchHold?

    /// Creates a record from its parts.
    package init(
        key: FileKey, size: Int64, modificationTimeNanoseconds: Int64, sha256: String, finishedAt: Date,
        appID: String, downloadUniqueID: String, identifier: String, deliveredPath: String,
        heldUntilLaunch: LaunchHold? = nil
    ) {
        self.key = key
        self.size = size
        self.modificationTimeNanoseconds = modificationTimeNanoseconds
        self.sha256 = sha256
        self.finishedAt = finishedAt
        self.appID = appID
        self.downloadUniqueID = downloadUniqueID
        self.identifier = identifier
        self.deliveredPath = deliveredPath
        self.heldUntilLaunch = heldUntilLaunch
    }

    /// Records the regular file at `path` as it is now (with `lstat`), as delivered there.
    ///
    /// - Parameter heldUntilLaunch: ``LaunchHold/atDelivery(essential:appHasLaunched:)``.
    /// - Throws: ``PurgeError`` when nothing is at `path` or it is not a regular file.
    package init(
        recordingFileAt path: String, sha256: String, finishedAt: Date, appID: String, downloadUniqueID: String,
        identifier: String, heldUntilLaunch: LaunchHold? = nil
    ) throws(PurgeError) {
        guard let identity = try FileIdentity.read(path: path) else {
            throw .system("lstat", path: path, errno: ENOENT)
        }
        self.init(
            key: identity.key, size: identity.size, modificationTimeNanoseconds: identity.modificationTimeNanoseconds,
            sha256: sha256, finishedAt: finishedAt, appID: appID, downloadUniqueID: downloadUniqueID,
            identifier: identifier, deliveredPath: path, heldUntilLaunch: heldUntilLaunch)
    }
}
