import Foundation
internal import GRDB

// The download manifest URL a user pointed an app at (`ba packs override`, schema v11).
extension BAStore {
    /// Points `app`'s download manifest at `url` until cleared (nil clears it). Refused for an app
    /// that gets no asset packs (no `pack_app` row): there is nothing to point.
    package func setPackOverride(app: String, url: String?) throws(BAStoreError) {
        try write("recording the manifest override of \(app)") { db in
            guard let url else {
                try db.executeCached(sql: "DELETE FROM pack_override WHERE app_id = ?", arguments: [app])
                return
            }
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM pack_app WHERE app_id = ?", arguments: [app]) == true
            else {
                throw BAStoreError(.unknownApp, "\(app) gets no asset packs", path: path)
            }
            try db.executeCached(
                sql: """
                    INSERT INTO pack_override (app_id, url, set_at) VALUES (?, ?, ?)
                    ON CONFLICT (app_id) DO UPDATE SET url = excluded.url, set_at = excluded.set_at
                    """,
                arguments: [app, url, StoreTime(Date())])
        }
    }

    /// Every app's override, by app (empty: none).
    package func packOverrides() throws(BAStoreError) -> [String: String] {
        try read("reading the manifest overrides") { db in
            var result: [String: String] = [:]
            for row in try Row.fetchAllCached(db, sql: "SELECT app_id, url FROM pack_override") {
                result[row["app_id"]] = row["url"]
            }
            return result
        }
    }
}
