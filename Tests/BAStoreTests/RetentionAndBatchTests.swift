import BAStore
import Foundation
import GRDB
import Testing

@Suite("BAStore retention and group commit") struct RetentionAndBatchTests {
    @Test func endedDownloadsArePrunedUnlessOwedOrTracked() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let delivered = try test.schedule("delivered")
        let owed = try test.schedule("owed")
        let tracked = try test.schedule("tracked")
        let active = try test.schedule("active")
        let done = try test.store.markFinished(uniqueIdentifier: delivered.uniqueIdentifier, destination: "/d/1")
        try test.store.markDelivered(app: "com.example.game", through: done.sequence)
        try test.store.markFailed(
            uniqueIdentifier: owed.uniqueIdentifier, error: .init(domain: "d", code: 1, message: "not yet told"))
        let trackedEvent = try test.store.markFinished(uniqueIdentifier: tracked.uniqueIdentifier, destination: "/d/3")
        try test.store.recordAsset(
            StoredAsset(
                downloadUniqueIdentifier: tracked.uniqueIdentifier, appIdentifier: "com.example.game",
                identifier: "tracked", deliveredPath: "/d/3", device: 1, inode: 2, size: 3,
                modificationTimeNanoseconds: 4, sha256: "", finishedAt: Date()))
        _ = trackedEvent

        #expect(
            try test.store.pruneEndedDownloads(olderThan: test.clock.now.addingTimeInterval(-3600)) == 0, "too young")
        #expect(try test.store.pruneEndedDownloads(olderThan: test.clock.now.addingTimeInterval(3600)) == 1)
        #expect(try test.store.download(uniqueIdentifier: delivered.uniqueIdentifier) == nil)
        #expect(try test.count("SELECT count(*) FROM event WHERE download_id = ?", [delivered.uniqueIdentifier]) == 0)
        for kept in [owed, tracked, active] {
            #expect(try test.store.download(uniqueIdentifier: kept.uniqueIdentifier) != nil, "\(kept.identifier)")
        }
    }

    @Test func aBatchCommitsEveryCallButOneThatFailed() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let first = try test.schedule("first")
        let second = try test.schedule("second")
        var refused: BAStoreError?
        try test.store.batch("test") {
            try test.store.recordBegan(uniqueIdentifier: first.uniqueIdentifier, offset: 0, isForeground: false)
            do {
                try test.store.recordBegan(uniqueIdentifier: "no-such-download", offset: 0, isForeground: false)
            } catch let error as BAStoreError {
                refused = error
            }
            try test.store.markFinished(uniqueIdentifier: second.uniqueIdentifier, destination: "/d/second")
            // Reads inside the batch see its own writes.
            #expect(try test.store.download(uniqueIdentifier: second.uniqueIdentifier)?.state == .finished)
        }
        #expect(refused?.code == .unknownDownload)
        #expect(try test.store.download(uniqueIdentifier: first.uniqueIdentifier)?.state == .downloading)
        #expect(try test.store.download(uniqueIdentifier: second.uniqueIdentifier)?.state == .finished)
        #expect(try test.count("SELECT count(*) FROM event") == 2)
    }

    @Test func aBatchThatThrowsStoresNothing() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let download = try test.schedule("level-1")
        struct Stop: Error {}
        #expect(throws: BAStoreError.self) {
            try test.store.batch("test") {
                try test.store.markFinished(uniqueIdentifier: download.uniqueIdentifier, destination: "/d/level-1")
                throw Stop()
            }
        }
        #expect(try test.store.download(uniqueIdentifier: download.uniqueIdentifier)?.state == .waiting)
        #expect(try test.count("SELECT count(*) FROM event") == 0)
    }

    @Test func aLanguageChangeRunIsRecorded() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let run = try test.store.recordExtensionRun(
            StoredExtensionRun(
                appIdentifier: "com.example.game", event: .languageChange, verdict: "ok", detail: nil,
                startedAt: Date(), durationMilliseconds: 3))
        #expect(try test.store.extensionRuns(app: "com.example.game").first?.event == run.event)
    }
}
