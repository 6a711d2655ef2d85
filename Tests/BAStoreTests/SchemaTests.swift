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
        #expect(settings["synchronous"] == "1", "NORMAL: LogSync fsyncs the -wal file on its own thread")
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
        #expect(
            tables == [
                "app", "asset", "asset_pack", "download", "event", "extension_run", "grdb_migrations", "pack_app",
                "pack_language", "pack_override", "pack_trust",
            ])
        #expect(
            indexes == [
                "asset_app", "download_active_identifier", "download_active_order", "download_app", "download_ended",
                "event_delivered", "event_download", "event_parked", "event_undelivered", "extension_run_app",
            ])
        #expect(migrations == ["v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13"])
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
        // One version beyond this build's, whatever this build's is.
        let next = BAStore.schemaVersion + 1
        try test.tamper { db in
            try db.execute(sql: "CREATE TABLE later_feature (id INTEGER PRIMARY KEY)")
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v\(next)')")
            try db.execute(sql: "PRAGMA user_version = \(next)")
        }
        let error = #expect(throws: BAStoreError.self) { _ = try BAStore.open(path: test.path) }
        #expect(error?.code == .schemaTooNew)
        #expect(error?.message.contains("schema version \(next)") == true, "\(String(describing: error))")
        #expect(error?.message.contains("up to \(BAStore.schemaVersion)") == true, "\(String(describing: error))")
        #expect(error?.message.contains("v\(next)") == true, "\(String(describing: error))")
        // Refused untouched.
        #expect(try TestStore.inspect(test.path) { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == next)

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

    @Test func vetSeesWhatTheFileHeldBeforeAnyMigrationAndARefusedFileIsLeftAsItWas() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.store.close()
        let fresh = test.directory.appendingPathComponent("fresh.sqlite").path
        var seen: [OpeningContents] = []
        try BAStore.open(path: fresh, vet: { seen.append($0) }).close()
        try BAStore.open(path: test.path, vet: { seen.append($0) }).close()
        #expect(seen.map(\.hasSchema) == [false, true])
        #expect(seen.allSatisfy { $0.isEmpty })

        let reopened = try BAStore.open(path: test.path)
        try reopened.register(
            StoredApp(bundleIdentifier: "com.example.game", version: "1.0", appDirectory: "/opt/game"))
        try reopened.close()
        try BAStore.open(path: test.path, vet: { seen.append($0) }).close()
        #expect(seen.last == OpeningContents(hasSchema: true, appCount: 1, hasHistory: false))

        // A refusal passes through, and the file is closed as it was found.
        let before = try Data(contentsOf: URL(fileURLWithPath: test.path))
        let error = #expect(throws: BAStoreError.self) {
            _ = try BAStore.open(
                path: test.path,
                vet: { _ throws(BAStoreError) in throw BAStoreError(.stateLost, "refused", path: test.path) })
        }
        #expect(error?.code == .stateLost)
        #expect(try Data(contentsOf: URL(fileURLWithPath: test.path)) == before)
    }

    @Test func refusesADamagedFileNamingWhatSQLiteFound() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        for index in 0..<50 { try test.schedule("level-\(index)") }
        let root = try test.store.rootPage(of: "download")
        try test.store.close()
        let handle = try #require(FileHandle(forUpdatingAtPath: test.path))
        try handle.seek(toOffset: UInt64((root.page - 1) * root.pageSize))
        try handle.write(contentsOf: Data(repeating: 0xA5, count: root.pageSize))
        try handle.close()
        let error = expectStoreError(.corrupt) { _ = try BAStore.open(path: test.path) }
        for words in [test.path, "damaged", "SQLite found", ".recover", "backup"] {
            #expect(error?.message.contains(words) == true, "\(String(describing: error))")
        }
    }
}
