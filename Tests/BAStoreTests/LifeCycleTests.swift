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
}
