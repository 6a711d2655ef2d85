import Foundation
internal import GRDB

extension BAStore {
    static let assetColumns = """
        download_id, app_id, identifier, delivered_path, device, inode, size, mtime_ns, sha256, finished_at,
        held_until_launch
        """

    /// Starts tracking a finished file (replacing an earlier record of the same download).
    package func recordAsset(_ asset: StoredAsset) throws(BAStoreError) {
        try write("recording the finished file of \(asset.downloadUniqueIdentifier)") { db in
            try db.executeCached(
                sql: "INSERT OR REPLACE INTO asset (\(Self.assetColumns)) VALUES (\(Self.placeholders(11)))",
                arguments: [
                    asset.downloadUniqueIdentifier, asset.appIdentifier, asset.identifier, asset.deliveredPath,
                    Int64(bitPattern: asset.device), Int64(bitPattern: asset.inode), asset.size,
                    asset.modificationTimeNanoseconds, asset.sha256, StoreTime(asset.finishedAt),
                    asset.heldUntilLaunch,
                ])
        }
    }

    /// Every tracked finished file, oldest first.
    package func assets() throws(BAStoreError) -> [StoredAsset] {
        try read("reading the finished files") { db in
            try Row.fetchAllCached(db, sql: "SELECT \(Self.assetColumns) FROM asset ORDER BY finished_at").map { row in
                StoredAsset(
                    downloadUniqueIdentifier: row["download_id"], appIdentifier: row["app_id"],
                    identifier: row["identifier"], deliveredPath: row["delivered_path"],
                    device: UInt64(bitPattern: row["device"] as Int64),
                    inode: UInt64(bitPattern: row["inode"] as Int64),
                    size: row["size"], modificationTimeNanoseconds: row["mtime_ns"], sha256: row["sha256"],
                    finishedAt: row["finished_at"], heldUntilLaunch: row["held_until_launch"])
            }
        }
    }

    /// Stops tracking finished files (purged, gone, or the app's own now).
    package func forgetAssets(_ downloadUniqueIdentifiers: [String]) throws(BAStoreError) {
        guard !downloadUniqueIdentifiers.isEmpty else { return }
        try write("forgetting \(downloadUniqueIdentifiers.count) finished file(s)") { db in
            for id in downloadUniqueIdentifiers {
                try db.executeCached(sql: "DELETE FROM asset WHERE download_id = ?", arguments: [id])
            }
        }
    }
}
