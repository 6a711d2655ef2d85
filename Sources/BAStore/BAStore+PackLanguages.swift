import Foundation
internal import GRDB

/// The language choice of one app with localized packs: one row of `pack_language` (schema v12).
package struct StoredPackLanguage: Sendable, Hashable {
    package var appIdentifier: String
    /// The language the app set (`AssetPackManager.resolvedLanguage`); nil: none.
    package var override: String?
    /// The preferred languages the app last sent (`reconcilePreferredLanguages()`); nil: basd's
    /// environment's.
    package var preferred: [String]?
    /// The language basd last put in place; nil: none yet.
    package var resolved: String?

    package init(appIdentifier: String, override: String? = nil, preferred: [String]? = nil, resolved: String? = nil) {
        self.appIdentifier = appIdentifier
        self.override = override
        self.preferred = preferred
        self.resolved = resolved
    }
}

extension BAStore {
    /// The language choice of `app` (nil: it has none recorded). A read that fails throws.
    package func packLanguage(app: String) throws(BAStoreError) -> StoredPackLanguage? {
        try read("reading the pack language of \(app)") { db in
            try Row.fetchOne(
                db, sql: "SELECT override, preferred, resolved FROM pack_language WHERE app_id = ?", arguments: [app]
            ).map { row in
                let text: String? = row["preferred"]
                // basd wrote it: a value that does not decode is a damaged row, not "none sent".
                let preferred = try text.map { try JSONDecoder().decode([String].self, from: Data($0.utf8)) }
                return StoredPackLanguage(
                    appIdentifier: app, override: row["override"], preferred: preferred, resolved: row["resolved"])
            }
        }
    }

    /// Records the language choice of `app` (replacing what was recorded).
    package func setPackLanguage(_ language: StoredPackLanguage) throws(BAStoreError) {
        let preferred = language.preferred.flatMap { try? JSONEncoder().encode($0) }.map {
            String(decoding: $0, as: UTF8.self)
        }
        try write("recording the pack language of \(language.appIdentifier)") { db in
            try db.executeCached(
                sql: """
                    INSERT INTO pack_language (app_id, override, preferred, resolved) VALUES (?, ?, ?, ?)
                    ON CONFLICT (app_id) DO UPDATE SET override = excluded.override,
                        preferred = excluded.preferred, resolved = excluded.resolved
                    """,
                arguments: [language.appIdentifier, language.override, preferred, language.resolved])
        }
    }
}
