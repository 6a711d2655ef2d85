import BAStore
import Foundation
import Testing

@Suite("BAStore apps") struct AppTests {
    @Test func registerUpdateAndFirstLaunch() throws {
        let test = try TestStore()
        defer { test.remove() }
        #expect(try test.registerApp() == nil, "a new app has no previous registration")
        let installed = try #require(try test.store.app("com.example.game"))
        #expect(installed.launched == false)
        #expect(installed.registeredAt == test.clock.now && installed.updatedAt == test.clock.now)
        #expect(installed.appGroupIdentifier == "group.com.example.game")
        #expect(installed.extensionPath == "/opt/com.example.game/libExt.so")

        test.clock.advance()
        #expect(try test.store.markLaunched(app: "com.example.game") == true)
        #expect(try test.store.markLaunched(app: "com.example.game") == false, "only the first launch is first")

        test.clock.advance()
        let previous = try test.store.register(
            StoredApp(bundleIdentifier: "com.example.game", version: "2.0", appDirectory: "/opt/game-2"))
        #expect(previous?.version == "1.0")
        let updated = try #require(try test.store.app("com.example.game"))
        #expect(updated.version == "2.0" && updated.appDirectory == "/opt/game-2" && updated.extensionPath == nil)
        #expect(updated.launched, "an update keeps the first launch")
        #expect(updated.registeredAt == installed.registeredAt && updated.updatedAt == test.clock.now)

        try test.registerApp("com.example.another")
        #expect(try test.store.apps().map(\.bundleIdentifier) == ["com.example.another", "com.example.game"])
        #expect(try test.store.app("com.example.missing") == nil)
        let error = #expect(throws: BAStoreError.self) { try test.store.markLaunched(app: "com.example.missing") }
        #expect(error?.code == .unknownApp)
    }

    @Test func theFirstLaunchClearsTheRestrictionsOfTheAppsActiveDownloads() throws {
        let test = try TestStore()
        defer { test.remove() }
        for app in ["com.example.game", "com.example.other"] { try test.registerApp(app) }
        let limits = StoredDownload.PreLaunchRestriction(byteLimit: 1000, allowList: ["cdn.example.com"])
        func schedule(_ identifier: String, app: String = "com.example.game") throws -> StoredDownload {
            try test.store.schedule(
                StoredDownload(
                    appIdentifier: app, identifier: identifier, url: "https://cdn.example.com/\(identifier)",
                    restriction: limits))
        }
        let queued = try schedule("queued")
        let running = try schedule("running")
        try test.store.recordBegan(uniqueIdentifier: running.uniqueIdentifier, offset: 0, isForeground: false)
        let failed = try schedule("failed")
        try test.store.markFailed(
            uniqueIdentifier: failed.uniqueIdentifier,
            error: .init(domain: "BAErrorDomain", code: 204, message: "over"))
        let other = try schedule("other", app: "com.example.other")

        #expect(try test.store.markLaunched(app: "com.example.game"))
        func restrictionNow(of download: StoredDownload) throws -> StoredDownload.PreLaunchRestriction? {
            try #require(try test.store.download(uniqueIdentifier: download.uniqueIdentifier)).restriction
        }
        #expect(try restrictionNow(of: queued) == nil)
        #expect(try restrictionNow(of: running) == nil)
        #expect(try restrictionNow(of: failed) == limits, "an ended download keeps what it was held to")
        #expect(try restrictionNow(of: other) == limits, "another app's downloads are not touched")
    }

    @Test func removingAnAppCascadesToEverythingItOwns() throws {
        let test = try TestStore()
        defer { test.remove() }
        for app in ["com.example.game", "com.example.other"] {
            try test.registerApp(app)
            let download = try test.schedule("level-1", app: app)
            try test.store.recordBegan(uniqueIdentifier: download.uniqueIdentifier, offset: 0, isForeground: false)
            try test.store.markFinished(uniqueIdentifier: download.uniqueIdentifier, destination: "/tmp/level-1")
            try test.schedule("level-2", app: app)
            try test.store.recordExtensionRun(
                StoredExtensionRun(
                    appIdentifier: app, event: .install, verdict: "ok", startedAt: test.clock.now,
                    durationMilliseconds: 12))
        }
        let removed = try test.store.removeApp("com.example.game")
        #expect(removed.bundleIdentifier == "com.example.game")
        for table in ["download", "event", "extension_run"] {
            #expect(try test.count("SELECT count(*) FROM \(table) WHERE app_id = 'com.example.game'") == 0, "\(table)")
        }
        #expect(try test.count("SELECT count(*) FROM download") == 2)
        #expect(try test.count("SELECT count(*) FROM event") == 2)
        #expect(try test.count("SELECT count(*) FROM extension_run") == 1)
        let error = #expect(throws: BAStoreError.self) { try test.store.removeApp("com.example.game") }
        #expect(error?.code == .unknownApp)
    }

    @Test func extensionRunsNewestFirstAndPruned() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let start = test.clock.now
        for (index, event) in [StoredExtensionRun.Event.install, .periodic, .finished].enumerated() {
            let run = try test.store.recordExtensionRun(
                StoredExtensionRun(
                    appIdentifier: "com.example.game", event: event, verdict: index == 1 ? "timedOut" : "ok",
                    detail: index == 1 ? "killed at the 30 s deadline" : nil,
                    startedAt: start.addingTimeInterval(Double(index) * 60), durationMilliseconds: Int64(index * 100)))
            #expect(run.id > 0)
        }
        let runs = try test.store.extensionRuns(app: "com.example.game")
        #expect(runs.map(\.event) == [.finished, .periodic, .install])
        #expect(runs[1].verdict == "timedOut" && runs[1].detail == "killed at the 30 s deadline")
        #expect(runs[1].durationMilliseconds == 100 && runs[1].startedAt == start.addingTimeInterval(60))
        #expect(try test.store.extensionRuns(app: "com.example.game", limit: 1).map(\.event) == [.finished])
        #expect(try test.store.pruneExtensionRuns(olderThan: start.addingTimeInterval(61)) == 2)
        #expect(try test.store.extensionRuns(app: "com.example.game").map(\.event) == [.finished])

        let error = #expect(throws: BAStoreError.self) {
            try test.store.recordExtensionRun(
                StoredExtensionRun(
                    appIdentifier: "com.example.missing", event: .install, verdict: "ok", startedAt: start,
                    durationMilliseconds: 1))
        }
        #expect(error?.code == .unknownApp)
    }
}
