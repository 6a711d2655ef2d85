import Foundation
internal import GRDB

extension BAStore {
    /// Records one call of an app's extension and its verdict.
    ///
    /// - Returns: The run as stored, with its ``StoredExtensionRun/id``.
    /// - Throws: ``BAStoreError/Code/unknownApp``, ``BAStoreError/Code/invalidArgument`` for a
    ///   negative duration.
    @discardableResult
    package func recordExtensionRun(_ run: StoredExtensionRun) throws(BAStoreError) -> StoredExtensionRun {
        guard run.durationMilliseconds >= 0 else {
            throw BAStoreError(.invalidArgument, "an extension run cannot last a negative time", path: path)
        }
        return try write("recording an extension run of \(run.appIdentifier)") { db in
            guard try Self.fetchApp(db, run.appIdentifier) != nil else {
                throw Self.unknownApp(run.appIdentifier, path: path)
            }
            try db.executeCached(
                sql: """
                    INSERT INTO extension_run (app_id, event, verdict, detail, started_at, duration_ms)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    run.appIdentifier, run.event.rawValue, run.verdict, run.detail, StoreTime(run.startedAt),
                    run.durationMilliseconds,
                ])
            var stored = run
            stored.id = db.lastInsertedRowID
            return stored
        }
    }

    /// The app's most recent extension runs, newest first.
    package func extensionRuns(
        app bundleIdentifier: String, limit: Int = 100
    ) throws(BAStoreError)
        -> [StoredExtensionRun]
    {
        try read("reading the extension runs of \(bundleIdentifier)") { db in
            try Row.fetchAllCached(
                db,
                sql: """
                    SELECT \(StoredExtensionRun.columns) FROM extension_run WHERE app_id = ?
                    ORDER BY started_at DESC, id DESC LIMIT ?
                    """, arguments: [bundleIdentifier, max(0, limit)]
            ).map(StoredExtensionRun.init(row:))
        }
    }

    /// Deletes extension runs that started before `date`.
    ///
    /// - Returns: How many runs were deleted.
    @discardableResult
    package func pruneExtensionRuns(olderThan date: Date) throws(BAStoreError) -> Int {
        try write("pruning extension runs") { db in
            try db.executeCached(sql: "DELETE FROM extension_run WHERE started_at < ?", arguments: [StoreTime(date)])
            return db.changesCount
        }
    }
}
