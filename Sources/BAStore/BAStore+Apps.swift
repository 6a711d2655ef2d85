import Foundation
internal import GRDB

extension BAStore {
    /// Registers an app, or updates its registration (a newer version, a moved directory).
    ///
    /// A new app starts with ``StoredApp/launched`` false, nothing used of its allowances and
    /// ``StoredApp/registeredAt`` now; an update keeps those and the scheduling state, and sets
    /// ``StoredApp/updatedAt``. The timestamps, `launched`, the used allowances and `scheduling`
    /// in `app` are ignored.
    ///
    /// - Returns: The registration before this call, nil when the app is new: compare versions to
    ///   tell an install from an update.
    @discardableResult
    package func register(_ app: StoredApp) throws(BAStoreError) -> StoredApp? {
        let now = self.now
        return try write("registering \(app.bundleIdentifier)") { db in
            let previous = try Self.fetchApp(db, app.bundleIdentifier)
            try db.executeCached(
                sql: """
                    INSERT INTO app (\(StoredApp.columns)) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, 0, 0, NULL)
                    ON CONFLICT (bundle_identifier) DO UPDATE SET
                        version = excluded.version, app_group_identifier = excluded.app_group_identifier,
                        app_directory = excluded.app_directory, extension_path = excluded.extension_path,
                        updated_at = excluded.updated_at, manifest_url = excluded.manifest_url,
                        restrictions = excluded.restrictions
                    """,
                arguments: [
                    app.bundleIdentifier, app.version, app.appGroupIdentifier, app.appDirectory, app.extensionPath,
                    StoreTime(now), StoreTime(now), app.manifestURL, try app.restrictionsJSON,
                ])
            return previous
        }
    }

    /// The app registered as `bundleIdentifier`, if any.
    package func app(_ bundleIdentifier: String) throws(BAStoreError) -> StoredApp? {
        try read("reading app \(bundleIdentifier)") { db in try Self.fetchApp(db, bundleIdentifier) }
    }

    /// Every registered app, by bundle identifier.
    package func apps() throws(BAStoreError) -> [StoredApp] {
        try read("reading apps") { db in
            try Row.fetchAllCached(db, sql: "SELECT \(StoredApp.columns) FROM app ORDER BY bundle_identifier")
                .map(StoredApp.init(row:))
        }
    }

    /// Records that the app's process connected to basd: its first launch, after which the
    /// pre-launch restrictions no longer apply. In the same transaction the first launch clears the
    /// ``StoredDownload/restriction`` of the app's active downloads, so a download scheduled before
    /// it is no longer held to a byte limit or an allow-list, after a restart of basd too (the
    /// caller lifts them from the running transfers).
    ///
    /// Every launch, the first or not, also releases the app's finished files kept until its next
    /// launch (``StoredAsset/heldUntilLaunch``): the app can now download them again.
    ///
    /// - Returns: Whether this was the first launch (false if it had been seen before).
    /// - Throws: ``BAStoreError/Code/unknownApp``.
    @discardableResult
    package func markLaunched(app bundleIdentifier: String) throws(BAStoreError) -> Bool {
        let now = self.now
        return try write("marking \(bundleIdentifier) launched") { db in
            guard let app = try Self.fetchApp(db, bundleIdentifier) else {
                throw Self.unknownApp(bundleIdentifier, path: path)
            }
            try db.executeCached(
                sql: "UPDATE asset SET held_until_launch = NULL WHERE app_id = ? AND held_until_launch IS NOT NULL",
                arguments: [bundleIdentifier])
            guard !app.launched else { return false }
            try db.executeCached(
                sql: "UPDATE app SET launched = 1, updated_at = ? WHERE bundle_identifier = ?",
                arguments: [StoreTime(now), bundleIdentifier])
            try db.executeCached(
                sql: """
                    UPDATE download SET restriction = NULL, updated_at = ?
                    WHERE app_id = ? AND state IN (0, 1, 2) AND restriction IS NOT NULL
                    """,
                arguments: [StoreTime(now), bundleIdentifier])
            return true
        }
    }

    /// Removes an app and, through the foreign keys' cascade, all its downloads, events and
    /// extension runs. Its files are the caller's to remove.
    ///
    /// - Returns: The registration that was removed.
    /// - Throws: ``BAStoreError/Code/unknownApp``.
    @discardableResult
    package func removeApp(_ bundleIdentifier: String) throws(BAStoreError) -> StoredApp {
        try write("removing \(bundleIdentifier)") { db in
            guard let app = try Self.fetchApp(db, bundleIdentifier) else {
                throw Self.unknownApp(bundleIdentifier, path: path)
            }
            try db.executeCached(sql: "DELETE FROM app WHERE bundle_identifier = ?", arguments: [bundleIdentifier])
            return app
        }
    }

    /// Deletes up to `limit` of the app's downloads (oldest first), with their events and
    /// tracked files (cascade), in one transaction: an uninstall removes a large app a slice at
    /// a time before ``removeApp(_:)``.
    ///
    /// - Returns: How many were deleted (fewer than `limit`: the app has none left), and the
    ///   active ones among them (their transfers and partial files are the caller's to drop).
    package func deleteDownloads(
        app bundleIdentifier: String, limit: Int
    ) throws(BAStoreError) -> (deleted: Int, active: [StoredDownload]) {
        try write("deleting downloads of \(bundleIdentifier)") { db in
            let rows = try Row.fetchAllCached(
                db,
                sql: """
                    SELECT \(StoredDownload.columns), rowid AS deleted_rowid FROM download WHERE app_id = ?
                    ORDER BY created_at, rowid LIMIT ?
                    """, arguments: [bundleIdentifier, max(1, limit)])
            var active: [StoredDownload] = []
            for row in rows {
                let download = try StoredDownload(row: row)
                if download.state.isActive { active.append(download) }
                try db.executeCached(
                    sql: "DELETE FROM download WHERE rowid = ?", arguments: [row["deleted_rowid"] as Int64])
            }
            return (rows.count, active)
        }
    }

    /// Adds `bytes` to what the app has used of its pre-launch allowance (essential or not): the
    /// manifest's size, for one.
    /// - Throws: ``BAStoreError/Code/unknownApp``.
    package func chargeAllowance(
        app bundleIdentifier: String, bytes: Int64, essential: Bool = false
    )
        throws(BAStoreError)
    {
        let column = essential ? "essential_allowance_used" : "allowance_used"
        try write("charging \(bundleIdentifier)'s allowance") { db in
            try db.executeCached(
                sql: "UPDATE app SET \(column) = \(column) + ? WHERE bundle_identifier = ?",
                arguments: [max(0, bytes), bundleIdentifier])
            guard db.changesCount == 1 else { throw Self.unknownApp(bundleIdentifier, path: path) }
        }
    }

    /// Replaces the app's scheduling state (basd's JSON).
    /// - Throws: ``BAStoreError/Code/unknownApp``.
    package func setScheduling(app bundleIdentifier: String, _ json: String) throws(BAStoreError) {
        try write("saving \(bundleIdentifier)'s scheduling state") { db in
            try db.executeCached(
                sql: "UPDATE app SET scheduling = ? WHERE bundle_identifier = ?", arguments: [json, bundleIdentifier])
            guard db.changesCount == 1 else { throw Self.unknownApp(bundleIdentifier, path: path) }
        }
    }

    static func fetchApp(_ db: Database, _ bundleIdentifier: String) throws -> StoredApp? {
        try Row.fetchOneCached(
            db, sql: "SELECT \(StoredApp.columns) FROM app WHERE bundle_identifier = ?", arguments: [bundleIdentifier]
        ).map(StoredApp.init(row:))
    }

    static func unknownApp(_ bundleIdentifier: String, path: String) -> BAStoreError {
        BAStoreError(.unknownApp, "no app is registered as \(bundleIdentifier): register it first", path: path)
    }
}
