import Foundation
internal import GRDB

// Asset packs: one row per app with packs, one per (app, pack) (schema v5; `declined` v6).
extension BAStore {
    static let packColumns =
        "app_id, pack_id, entry, local_version, target, requested, failure, failure_code, declined, interrupted_starts, updated_at"

    /// Records that `app` gets asset packs (or no longer: `publicKey` is kept as given).
    package func setPackApp(_ app: StoredPackApp) throws(BAStoreError) {
        try write("recording the asset packs of \(app.appIdentifier)") { db in
            try db.executeCached(
                sql: """
                    INSERT INTO pack_app (app_id, public_key, checked_at, check_error, check_error_code, key_warning,
                        opted_in_by_use)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (app_id) DO UPDATE SET public_key = excluded.public_key,
                        checked_at = excluded.checked_at, check_error = excluded.check_error,
                        check_error_code = excluded.check_error_code, key_warning = excluded.key_warning,
                        opted_in_by_use = excluded.opted_in_by_use
                    """,
                arguments: [
                    app.appIdentifier, app.publicKey, app.checkedAt.map(StoreTime.init), app.checkError,
                    app.checkErrorCode, app.keyWarning, app.optedInByUse,
                ])
        }
    }

    /// The apps that have a row in `asset_pack` (those of a self-hosted manifest have no
    /// `pack_app` row).
    package func appsWithPackRows() throws(BAStoreError) -> Set<String> {
        try read("reading the apps with asset pack rows") { db in
            Set(try String.fetchAll(db, sql: "SELECT DISTINCT app_id FROM asset_pack"))
        }
    }

    /// Every app that gets asset packs.
    package func packApps() throws(BAStoreError) -> [StoredPackApp] {
        try read("reading the apps with asset packs") { db in
            try Row.fetchAllCached(
                db,
                sql: """
                    SELECT app_id, public_key, checked_at, check_error, check_error_code, key_warning, opted_in_by_use
                    FROM pack_app ORDER BY app_id
                    """
            ).map { row in
                StoredPackApp(
                    appIdentifier: row["app_id"], publicKey: row["public_key"], checkedAt: row["checked_at"],
                    checkError: row["check_error"], checkErrorCode: row["check_error_code"],
                    keyWarning: row["key_warning"], optedInByUse: row["opted_in_by_use"])
            }
        }
    }

    /// Stops `app` getting asset packs: its rows go (the files are the pack service's to remove).
    package func removePackApp(_ app: String) throws(BAStoreError) {
        try write("removing the asset packs of \(app)") { db in
            try db.executeCached(sql: "DELETE FROM asset_pack WHERE app_id = ?", arguments: [app])
            try db.executeCached(sql: "DELETE FROM pack_app WHERE app_id = ?", arguments: [app])
            try db.executeCached(sql: "DELETE FROM pack_override WHERE app_id = ?", arguments: [app])
            try db.executeCached(sql: "DELETE FROM pack_language WHERE app_id = ?", arguments: [app])
        }
    }

    /// Inserts or replaces one pack's row (`updatedAt` is set to now).
    package func savePack(_ pack: StoredPack) throws(BAStoreError) {
        try write("recording asset pack \(pack.packID) of \(pack.appIdentifier)") { db in
            try db.executeCached(
                sql: "INSERT OR REPLACE INTO asset_pack (\(Self.packColumns)) VALUES (\(Self.placeholders(11)))",
                arguments: [
                    pack.appIdentifier, pack.packID, pack.entry, pack.localVersion, pack.target, pack.requested,
                    pack.failure, pack.failureCode, pack.declined, pack.interruptedStarts, StoreTime(Date()),
                ])
        }
    }

    /// Forgets one pack (no longer listed and removed from disk).
    package func deletePack(app: String, pack: String) throws(BAStoreError) {
        try write("forgetting asset pack \(pack) of \(app)") { db in
            try db.executeCached(
                sql: "DELETE FROM asset_pack WHERE app_id = ? AND pack_id = ?", arguments: [app, pack])
        }
    }

    /// The packs of `app` (nil: of every app), by app then pack id.
    package func packs(app: String? = nil) throws(BAStoreError) -> [StoredPack] {
        try read("reading asset packs") { db in
            let rows =
                if let app {
                    try Row.fetchAllCached(
                        db, sql: "SELECT \(Self.packColumns) FROM asset_pack WHERE app_id = ? ORDER BY pack_id",
                        arguments: [app])
                } else {
                    try Row.fetchAllCached(
                        db, sql: "SELECT \(Self.packColumns) FROM asset_pack ORDER BY app_id, pack_id")
                }
            return rows.map { row in
                StoredPack(
                    appIdentifier: row["app_id"], packID: row["pack_id"], entry: row["entry"],
                    localVersion: row["local_version"], target: row["target"], requested: row["requested"],
                    failure: row["failure"], failureCode: row["failure_code"], declined: row["declined"],
                    interruptedStarts: row["interrupted_starts"], updatedAt: row["updated_at"])
            }
        }
    }

    /// The highest download-manifest sequence accepted for `app` with `publicKey` (base64; ''
    /// for no key), and the SHA-256 of its bytes; nil when none was. A read that fails throws:
    /// the caller refuses the manifest (fail closed).
    package func packTrustMark(
        app: String, publicKey: String
    ) throws(BAStoreError) -> (
        sequence: Int, sha256: String
    )? {
        try read("reading the manifest sequence of \(app)") { db in
            try Row.fetchOne(
                db, sql: "SELECT sequence, manifest_sha256 FROM pack_trust WHERE app_id = ? AND public_key = ?",
                arguments: [app, publicKey]
            ).map { ($0["sequence"], $0["manifest_sha256"]) }
        }
    }

    /// Records a download manifest accepted for `app` with `publicKey`, and with it the packs it
    /// lists (`rows`, saved) and the packs it no longer lists (`unlisted`, their entry cleared),
    /// in one transaction: the sequence is never stored without what it vouches for, nor the
    /// reverse. A sequence below the stored one is refused here too (`constraint`).
    package func acceptManifest(
        app: String, publicKey: String, sequence: Int?, sha256: String, rows: [StoredPack]
    ) throws(BAStoreError) {
        try write("recording the download manifest of \(app)") { db in
            if let sequence {
                let stored = try Int.fetchOne(
                    db, sql: "SELECT sequence FROM pack_trust WHERE app_id = ? AND public_key = ?",
                    arguments: [app, publicKey])
                if let stored, stored > sequence {
                    throw BAStoreError(
                        .invalidArgument, "manifest sequence \(sequence) is below the accepted \(stored)", path: path)
                }
                try db.executeCached(
                    sql: """
                        INSERT INTO pack_trust (app_id, public_key, sequence, manifest_sha256, accepted_at)
                        VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (app_id, public_key) DO UPDATE SET sequence = excluded.sequence,
                            manifest_sha256 = excluded.manifest_sha256, accepted_at = excluded.accepted_at
                        """,
                    arguments: [app, publicKey, sequence, sha256, StoreTime(Date())])
            }
            for pack in rows {
                try db.executeCached(
                    sql: "INSERT OR REPLACE INTO asset_pack (\(Self.packColumns)) VALUES (\(Self.placeholders(11)))",
                    arguments: [
                        pack.appIdentifier, pack.packID, pack.entry, pack.localVersion, pack.target, pack.requested,
                        pack.failure, pack.failureCode, pack.declined, pack.interruptedStarts, StoreTime(Date()),
                    ])
            }
        }
    }
}
