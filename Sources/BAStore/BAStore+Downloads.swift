import Foundation
internal import GRDB

extension BAStore {
    /// Schedules a download: stores it, active, for its app.
    ///
    /// The store sets ``StoredDownload/createdAt`` and ``StoredDownload/updatedAt``; every other
    /// field is stored as given. An identifier may be scheduled again once its previous download
    /// has finished or failed. With `chargingAllowance`, its declared size is added, in the same
    /// transaction, to what the app has used of its pre-launch allowance (essential or not).
    ///
    /// - Returns: The download as stored.
    /// - Throws: ``BAStoreError/Code/duplicateIdentifier`` when the app already has an active
    ///   download with this identifier, or the unique identifier is already stored (Apple's code
    ///   100 upstream); ``BAStoreError/Code/unknownApp``; ``BAStoreError/Code/invalidArgument``
    ///   when the state is not an active one or a size is negative.
    @discardableResult
    package func schedule(
        _ download: StoredDownload, chargingAllowance: Bool = false
    ) throws(BAStoreError)
        -> StoredDownload
    {
        guard download.state.isActive else {
            throw BAStoreError(
                .invalidArgument,
                "a download is scheduled created, waiting or downloading, not \(download.state)", path: path)
        }
        guard (download.expectedSize ?? 1) > 0, download.bytesOnDisk >= 0 else {
            throw BAStoreError(
                .invalidArgument, "expected size must be positive (or unknown) and bytes on disk not negative",
                path: path)
        }
        var stored = download
        stored.createdAt = now
        stored.updatedAt = stored.createdAt
        return try write("scheduling \(download.identifier) for \(download.appIdentifier)") { db in
            guard
                try Bool.fetchOneCached(
                    db, sql: "SELECT 1 FROM app WHERE bundle_identifier = ?", arguments: [download.appIdentifier])
                    != nil
            else {
                throw Self.unknownApp(download.appIdentifier, path: path)
            }
            // Checked in this (immediate, so exclusive) transaction for a message naming the other
            // download; the partial unique index `download_active_identifier` enforces it anyway.
            if let existing = try String.fetchOneCached(
                db,
                sql: """
                    SELECT unique_identifier FROM download
                    WHERE app_id = ? AND identifier = ? AND state IN (0, 1, 2)
                    """, arguments: [download.appIdentifier, download.identifier])
            {
                throw BAStoreError(
                    .duplicateIdentifier,
                    "\(download.appIdentifier) already has an active download \"\(download.identifier)\" "
                        + "(\(existing)); cancel it or wait until it ends", path: path)
            }
            if try Self.fetchDownload(db, download.uniqueIdentifier) != nil {
                throw BAStoreError(
                    .duplicateIdentifier,
                    "a download with unique identifier \(download.uniqueIdentifier) is already stored; "
                        + "schedule a copy with a fresh one", path: path)
            }
            let failure = stored.lastError
            try db.executeCached(
                sql: "INSERT INTO download (\(StoredDownload.columns)) VALUES (\(Self.placeholders(25)))",
                arguments: [
                    stored.uniqueIdentifier, stored.appIdentifier, stored.identifier, stored.url,
                    try stored.headersJSON,
                    stored.applicationGroupIdentifier, stored.priority, stored.isEssential, stored.expectedSize,
                    stored.sha256, stored.state.rawValue, stored.isForeground, stored.bytesOnDisk, stored.validator,
                    stored.partialPath, stored.destinationPath, stored.attempts, failure?.domain, failure?.code,
                    failure?.message, StoreTime(stored.createdAt), StoreTime(stored.updatedAt),
                    try stored.restrictionJSON, stored.download.allowsExpensiveNetworkAccess,
                    stored.download.isAssetPack,
                ])
            if chargingAllowance, let size = stored.expectedSize {
                let column = stored.isEssential ? "essential_allowance_used" : "allowance_used"
                try db.executeCached(
                    sql: "UPDATE app SET \(column) = \(column) + ? WHERE bundle_identifier = ?",
                    arguments: [size, stored.appIdentifier])
            }
            return stored
        }
    }

    /// The download with this unique identifier, active or ended, if stored.
    package func download(uniqueIdentifier: String) throws(BAStoreError) -> StoredDownload? {
        try read("reading download \(uniqueIdentifier)") { db in try Self.fetchDownload(db, uniqueIdentifier) }
    }

    /// The app's downloads, active and ended, oldest first.
    package func downloads(app bundleIdentifier: String) throws(BAStoreError) -> [StoredDownload] {
        try read("reading the downloads of \(bundleIdentifier)") { db in
            try Row.fetchAllCached(
                db,
                sql: """
                    SELECT \(StoredDownload.columns) FROM download WHERE app_id = ?
                    ORDER BY created_at, rowid
                    """, arguments: [bundleIdentifier]
            ).map(StoredDownload.init(row:))
        }
    }

    /// The app's active downloads (created, waiting or downloading), oldest first: what it sees
    /// as its current downloads. Read through the active-identifier index, so the app's history of
    /// ended downloads costs nothing.
    package func activeDownloads(
        app bundleIdentifier: String, limit: Int = .max
    ) throws(BAStoreError)
        -> [StoredDownload]
    {
        try read("reading the active downloads of \(bundleIdentifier)") { db in
            try Row.fetchAllCached(
                db,
                sql: """
                    SELECT \(StoredDownload.columns) FROM download WHERE app_id = ? AND state IN (0, 1, 2)
                    ORDER BY created_at, rowid LIMIT ?
                    """, arguments: [bundleIdentifier, max(0, limit)]
            ).map(StoredDownload.init(row:))
        }
    }

    /// The first `limit` active downloads of every app in queue order (as ``activeDownloads()``),
    /// leaving out those in `excluded` (the ones basd already handed to its engine). Walks the
    /// queue-order index from its start, so it reads about `excluded.count + limit` entries.
    package func activeDownloads(excluding excluded: Set<String>, limit: Int) throws(BAStoreError) -> [StoredDownload] {
        let list = String(decoding: (try? JSONEncoder().encode(Array(excluded))) ?? Data("[]".utf8), as: UTF8.self)
        return try read("reading the next active downloads") { db in
            try Row.fetchAllCached(
                db,
                sql: """
                    SELECT \(StoredDownload.columns) FROM download WHERE state IN (0, 1, 2)
                    AND unique_identifier NOT IN (SELECT value FROM json_each(?))
                    ORDER BY essential DESC, priority DESC, created_at, rowid LIMIT ?
                    """, arguments: [list, max(0, limit)]
            ).map(StoredDownload.init(row:))
        }
    }

    /// The unique identifiers of every active download in queue order (as
    /// ``activeDownloads(excluding:limit:)`` reads them), leaving out those in `excluded` (the
    /// ones basd already handed to its engine): the downloads waiting in the store, the next to
    /// start first. One walk of the queue-order index reading one column, for listings that show
    /// each queued download's place (100,000 queued downloads are one query, not one per row).
    package func queuedDownloadIdentifiers(excluding excluded: Set<String>) throws(BAStoreError) -> [String] {
        let list = String(decoding: (try? JSONEncoder().encode(Array(excluded))) ?? Data("[]".utf8), as: UTF8.self)
        return try read("reading the queue's order") { db in
            try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT unique_identifier FROM download WHERE state IN (0, 1, 2)
                        AND unique_identifier NOT IN (SELECT value FROM json_each(?))
                        ORDER BY essential DESC, priority DESC, created_at, rowid
                        """), arguments: [list])
        }
    }

    /// The active downloads that never wait for a slot (foreground or essential), in queue order.
    package func urgentActiveDownloads() throws(BAStoreError) -> [StoredDownload] {
        try read("reading the foreground and essential downloads") { db in
            try Row.fetchAllCached(
                db,
                sql: """
                    SELECT \(StoredDownload.columns) FROM download
                    WHERE state IN (0, 1, 2) AND (foreground = 1 OR essential = 1)
                    ORDER BY essential DESC, priority DESC, created_at, rowid
                    """
            ).map(StoredDownload.init(row:))
        }
    }

    /// Every active download (created, waiting or downloading) of every app, in queue order:
    /// essential first, then higher priority, then earlier scheduled. What a restarted basd
    /// resumes.
    package func activeDownloads() throws(BAStoreError) -> [StoredDownload] {
        try read("reading the active downloads") { db in
            try Row.fetchAllCached(
                db,
                sql: """
                    SELECT \(StoredDownload.columns) FROM download WHERE state IN (0, 1, 2)
                    ORDER BY essential DESC, priority DESC, created_at, rowid
                    """
            ).map(StoredDownload.init(row:))
        }
    }

    /// How many downloads are active (created, waiting or downloading), counted by SQLite
    /// without reading them (for `status`).
    package func activeDownloadCount() throws(BAStoreError) -> Int {
        try read("counting the active downloads") { db in
            try Int.fetchOneCached(db, sql: "SELECT count(*) FROM download WHERE state IN (0, 1, 2)") ?? 0
        }
    }

    /// Cancels the app's active download with this identifier: deletes it and, by cascade, its
    /// events (Apple delivers nothing about a cancelled download). Its partial file is the
    /// caller's to delete.
    ///
    /// - Returns: The download that was cancelled (to stop its transfer and remove its files).
    /// - Throws: ``BAStoreError/Code/notScheduled`` when the app has no active download with this
    ///   identifier (Apple's code 101 upstream).
    @discardableResult
    package func cancel(app bundleIdentifier: String, identifier: String) throws(BAStoreError) -> StoredDownload {
        try write("cancelling \(identifier) of \(bundleIdentifier)") { db in
            guard
                let download = try Row.fetchOneCached(
                    db,
                    sql: """
                        SELECT \(StoredDownload.columns) FROM download
                        WHERE app_id = ? AND identifier = ? AND state IN (0, 1, 2)
                        """, arguments: [bundleIdentifier, identifier]
                ).map(StoredDownload.init(row:))
            else {
                throw BAStoreError(
                    .notScheduled, "\(bundleIdentifier) has no active download \"\(identifier)\" to cancel",
                    path: path)
            }
            try db.executeCached(
                sql: "DELETE FROM download WHERE unique_identifier = ?", arguments: [download.uniqueIdentifier])
            return download
        }
    }

    /// Marks an active download foreground (`startForegroundDownload`). The transfer's own
    /// `paused` and `began` are recorded by ``recordPaused(uniqueIdentifier:bytesOnDisk:)`` and
    /// ``recordBegan(uniqueIdentifier:offset:isForeground:partialPath:)``.
    ///
    /// - Returns: The download as stored.
    /// - Throws: ``BAStoreError/Code/notScheduled`` when no active download has this identifier.
    @discardableResult
    package func promote(uniqueIdentifier: String) throws(BAStoreError) -> StoredDownload {
        let now = self.now
        return try write("promoting \(uniqueIdentifier)") { db in
            guard var download = try Self.fetchDownload(db, uniqueIdentifier), download.state.isActive else {
                throw BAStoreError(
                    .notScheduled, "no active download has unique identifier \(uniqueIdentifier) to promote",
                    path: path)
            }
            download.isForeground = true
            download.updatedAt = now
            try db.executeCached(
                sql: "UPDATE download SET foreground = 1, updated_at = ? WHERE unique_identifier = ?",
                arguments: [StoreTime(now), uniqueIdentifier])
            return download
        }
    }

    static func fetchDownload(_ db: Database, _ uniqueIdentifier: String) throws -> StoredDownload? {
        try Row.fetchOneCached(
            db, sql: "SELECT \(StoredDownload.columns) FROM download WHERE unique_identifier = ?",
            arguments: [uniqueIdentifier]
        ).map(StoredDownload.init(row:))
    }

    static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }
}
