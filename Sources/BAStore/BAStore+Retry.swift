import Foundation
internal import GRDB

extension BAStore {
    /// Makes a failed download active again (`ba retry`): waiting, its error cleared, its bytes on
    /// disk, validator and partial file kept so the transfer resumes where they are still valid.
    ///
    /// - Returns: The download as stored.
    /// - Throws: ``BAStoreError/Code/unknownDownload``; ``BAStoreError/Code/downloadEnded`` when it
    ///   did not fail (it is active or finished); ``BAStoreError/Code/duplicateIdentifier`` when the
    ///   app has another active download with the same identifier.
    @discardableResult
    package func requeue(uniqueIdentifier: String) throws(BAStoreError) -> StoredDownload {
        let now = self.now
        return try write("requeuing \(uniqueIdentifier)") { db in
            guard var download = try Self.fetchDownload(db, uniqueIdentifier) else {
                throw BAStoreError(
                    .unknownDownload, "no download has unique identifier \(uniqueIdentifier)", path: path)
            }
            guard download.state == .failed else {
                throw BAStoreError(
                    .downloadEnded,
                    "download \(uniqueIdentifier) did not fail (it is \(download.state.isActive ? "active" : "finished"))",
                    path: path)
            }
            let other =
                try Int.fetchOne(
                    db,
                    sql: "SELECT COUNT(*) FROM download WHERE app_id = ? AND identifier = ? AND state IN (0, 1, 2)",
                    arguments: [download.appIdentifier, download.identifier]) ?? 0
            if other > 0 {
                throw BAStoreError(
                    .duplicateIdentifier,
                    "\(download.appIdentifier) already has an active download \"\(download.identifier)\"", path: path)
            }
            try db.execute(
                sql: """
                    UPDATE download SET state = 1, error_domain = NULL, error_code = NULL, error_message = NULL,
                        updated_at = ?
                    WHERE unique_identifier = ?
                    """, arguments: [StoreTime(now), uniqueIdentifier])
            download.state = .waiting
            download.lastError = nil
            download.updatedAt = now
            return download
        }
    }
}
