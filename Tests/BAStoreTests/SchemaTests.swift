import BAStore
import Foundation
import GRDB
import Testing

@Suite("BAStore schema and opening") struct SchemaTests {
    @Test func createsTheSchemaWithDurableSettingsAndReopens() throws {
        let test = try TestStore()
        defer { test.remove() }
        let settings = try test.store.connectionSettings()
        #expect(settings["journal_mode"] == "wal")
        #expect(settings["synchronous"] == "2", "FULL")
        #expect(settings["foreign_keys"] == "1")
        #expect(settings["busy_timeout"] == "5000")
        #expect(settings["user_version"] == String(BAStore.schemaVersion))
        let (tables, indexes, migrations) = try test.inspect { db in
            (
                try String.fetchAll(
                    db,
                    sql:
                        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
                ),
                try String.fetchAll(
                    db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name"),
                try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
            )
        }
        #expect(tables == ["app", "asset", "download", "event", "extension_run", "grdb_migrations"])
        #expect(
            indexes == [
                "asset_app", "download_active_identifier", "download_active_order", "download_app", "download_ended",
                "event_delivered", "event_download", "event_parked", "event_undelivered", "extension_run_app",
            ])
        #expect(migrations == ["v1", "v2", "v3", "v4"])
        let mode = try FileManager.default.attributesOfItem(atPath: test.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        try test.registerApp()
        try test.schedule("level-1")
        try test.store.close()
        expectStoreError(.database) { _ = try test.store.apps() }
        let reopened = try BAStore.open(path: test.path)
        defer { try? reopened.close() }
        #expect(try reopened.app("com.example.game")?.version == "1.0")
        #expect(try reopened.activeDownloads().map(\.identifier) == ["level-1"])
        #expect(try reopened.connectionSettings()["user_version"] == String(BAStore.schemaVersion))
        #expect(try reopened.integrityCheck() == ["ok"])
    }

    @Test func refusesAFileWrittenByANewerSchema() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.store.close()
        try test.tamper { db in
            try db.execute(sql: "CREATE TABLE later_feature (id INTEGER PRIMARY KEY)")
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v5')")
            try db.execute(sql: "PRAGMA user_version = 5")
        }
        let error = #expect(throws: BAStoreError.self) { _ = try BAStore.open(path: test.path) }
        #expect(error?.code == .schemaTooNew)
        #expect(error?.message.contains("schema version 5") == true, "\(String(describing: error))")
        #expect(error?.message.contains("up to 4") == true, "\(String(describing: error))")
        #expect(error?.message.contains("v5") == true, "\(String(describing: error))")
        // Refused untouched.
        #expect(try TestStore.inspect(test.path) { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == 5)

        // A newer migration alone (same user_version) is refused too.
        try test.tamper { db in try db.execute(sql: "PRAGMA user_version = 2") }
        let again = #expect(throws: BAStoreError.self) { _ = try BAStore.open(path: test.path) }
        #expect(again?.code == .schemaTooNew)
    }

    @Test func refusesAFileThatIsNotADatabase() throws {
        let test = try TestStore()
        defer { test.remove() }
        let path = test.directory.appendingPathComponent("notes.txt").path
        try Data(String(repeating: "not a database\n", count: 100).utf8).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: BAStoreError.self) { _ = try BAStore.open(path: path) }
        #expect(error?.code == .database)
        #expect(error?.message.contains("not an SQLite database") == true, "\(String(describing: error))")
        #expect(error?.path == path)
    }

    @Test func createsItsFolderPrivately() throws {
        let test = try TestStore()
        defer { test.remove() }
        let folder = test.directory.appendingPathComponent("data/background-assets")
        let store = try BAStore.open(path: folder.appendingPathComponent("state.sqlite").path)
        try store.close()
        let mode = try FileManager.default.attributesOfItem(atPath: folder.path)[.posixPermissions] as? Int
        #expect(mode == 0o700)
    }
}
