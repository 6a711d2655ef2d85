import BACore
import BAStore
import Foundation
import Testing

/// Schema v2: restrictions, allowances used, scheduling state, a download's pre-launch
/// restriction, tracked finished files.
@Suite("BAStore app life cycle (schema v2)") struct LifeCycleTests {
    @Test func restrictionsAndAllowancesSurviveAnUpdate() throws {
        let test = try TestStore()
        defer { test.remove() }
        let restrictions = StoredApp.Restrictions(
            downloadAllowance: 10_000, essentialDownloadAllowance: 5_000, domainAllowList: ["*.example.com"],
            maxInstallSize: 20_000, essentialMaxInstallSize: 6_000)
        try test.store.register(
            StoredApp(
                bundleIdentifier: "com.example.game", version: "1.0", appGroupIdentifier: "group.com.example.game",
                appDirectory: "/opt/game", manifestURL: "https://cdn.example.com/manifest.json",
                restrictions: restrictions))
        try test.store.chargeAllowance(app: "com.example.game", bytes: 300)
        var essential = StoredDownload(
            appIdentifier: "com.example.game", identifier: "core", url: "https://cdn.example.com/core",
            applicationGroupIdentifier: "group.com.example.game", isEssential: true, expectedSize: 4_000)
        essential.restriction = .init(byteLimit: nil, allowList: ["*.example.com"])
        try test.store.schedule(essential, chargingAllowance: true)
        let other = StoredDownload(
            appIdentifier: "com.example.game", identifier: "extra", url: "https://cdn.example.com/extra",
            applicationGroupIdentifier: "group.com.example.game", expectedSize: 2_000,
            restriction: .init(byteLimit: 2_000, allowList: nil))
        try test.store.schedule(other, chargingAllowance: true)
        try test.store.schedule(
            StoredDownload(
                appIdentifier: "com.example.game", identifier: "after-launch", url: "https://cdn.example.com/x",
                expectedSize: 99_999))
        try test.store.setScheduling(app: "com.example.game", #"{"nextRun": 1}"#)

        var app = try #require(try test.store.app("com.example.game"))
        #expect(app.restrictions == restrictions)
        #expect(app.manifestURL == "https://cdn.example.com/manifest.json")
        #expect(app.allowanceUsed == 2_300 && app.essentialAllowanceUsed == 4_000)
        #expect(app.scheduling == #"{"nextRun": 1}"#)
        let stored = try test.store.downloads(app: "com.example.game")
        #expect(stored.first { $0.identifier == "core" }?.restriction?.allowList == ["*.example.com"])
        #expect(stored.first { $0.identifier == "extra" }?.restriction?.byteLimit == 2_000)
        #expect(stored.first { $0.identifier == "after-launch" }?.restriction == nil)

        // An update replaces the restrictions, keeps what was used and the scheduling state.
        try test.store.register(
            StoredApp(bundleIdentifier: "com.example.game", version: "2.0", appDirectory: "/opt/game"))
        app = try #require(try test.store.app("com.example.game"))
        #expect(app.restrictions == StoredApp.Restrictions() && app.manifestURL == nil)
        #expect(app.allowanceUsed == 2_300 && app.essentialAllowanceUsed == 4_000)
        #expect(app.scheduling == #"{"nextRun": 1}"#)

        expectStoreError(.unknownApp) { try test.store.chargeAllowance(app: "com.example.missing", bytes: 1) }
        expectStoreError(.unknownApp) { try test.store.setScheduling(app: "com.example.missing", "{}") }
    }

    @Test func trackedFinishedFiles() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let download = try test.schedule("level-1")
        let asset = StoredAsset(
            downloadUniqueIdentifier: download.uniqueIdentifier, appIdentifier: "com.example.game",
            identifier: "level-1", deliveredPath: "/tmp/x", device: UInt64.max - 1, inode: 1 << 62, size: 123,
            modificationTimeNanoseconds: 1_700_000_000_123_456_789, sha256: "ab", finishedAt: test.clock.now)
        try test.store.recordAsset(asset)
        #expect(try test.store.assets() == [asset], "device and inode keep all 64 bits")
        try test.store.forgetAssets([download.uniqueIdentifier])
        #expect(try test.store.assets().isEmpty)
        try test.store.recordAsset(asset)
        try test.store.removeApp("com.example.game")
        #expect(try test.store.assets().isEmpty, "removing the app cascades")
    }

    @Test func aLaunchReleasesTheFilesHeldUntilIt() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        try test.registerApp("com.example.another")
        func asset(_ identifier: String, app: String = "com.example.game", held: String?) throws -> StoredAsset {
            let download = try test.schedule(identifier, app: app)
            let asset = StoredAsset(
                downloadUniqueIdentifier: download.uniqueIdentifier, appIdentifier: app, identifier: identifier,
                deliveredPath: "/tmp/\(identifier)", device: 1, inode: UInt64(identifier.count), size: 1,
                modificationTimeNanoseconds: 1, sha256: "", finishedAt: test.clock.now, heldUntilLaunch: held)
            try test.store.recordAsset(asset)
            return asset
        }
        let config = try asset("config", held: "firstLaunch")
        let level = try asset("level-2", held: nil)
        let other = try asset("other", app: "com.example.another", held: "firstLaunch")
        #expect(try test.store.assets().map(\.heldUntilLaunch) == ["firstLaunch", nil, "firstLaunch"])

        // The first launch releases the app's holds, not another app's.
        #expect(try test.store.markLaunched(app: "com.example.game"))
        var released = config
        released.heldUntilLaunch = nil
        #expect(try test.store.assets() == [released, level, other])

        // An update's essential file, held until the next launch, which is not the first.
        _ = try asset("config-2", held: "essential")
        #expect(try test.store.markLaunched(app: "com.example.game") == false)
        #expect(try test.store.assets().first { $0.identifier == "config-2" }?.heldUntilLaunch == nil)
        #expect(try test.store.assets().first { $0.identifier == "other" }?.heldUntilLaunch == "firstLaunch")

        // The column takes only the names basd knows.
        #expect(throws: BAStoreError.self) { _ = try asset("bad", held: "someday") }
    }

    @Test func migratingToV8HoldsTheFilesOfAnAppNotLaunchedYet() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        try test.registerApp("com.example.launched")
        try test.store.markLaunched(app: "com.example.launched")
        for (identifier, app) in [("config", "com.example.game"), ("level-1", "com.example.launched")] {
            let download = try test.schedule(identifier, app: app)
            try test.store.recordAsset(
                StoredAsset(
                    downloadUniqueIdentifier: download.uniqueIdentifier, appIdentifier: app, identifier: identifier,
                    deliveredPath: "/tmp/\(identifier)", device: 1, inode: UInt64(identifier.count), size: 1,
                    modificationTimeNanoseconds: 1, sha256: "", finishedAt: test.clock.now))
        }
        try test.store.close()
        // Back to a version 7 file: no column, no v8 migration.
        try test.tamper { db in
            try db.execute(sql: "ALTER TABLE asset DROP COLUMN held_until_launch")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v8'")
            try db.execute(sql: "PRAGMA user_version = 7")
        }
        let reopened = try BAStore.open(path: test.path)
        defer { try? reopened.close() }
        let held = Dictionary(uniqueKeysWithValues: try reopened.assets().map { ($0.identifier, $0.heldUntilLaunch) })
        #expect(held.count == 2 && held["config"] == "firstLaunch" && held["level-1"] == .some(nil), "\(held)")
    }
}
