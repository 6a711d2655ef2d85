import BACore
import BAStore
import Foundation
import GRDB
import Testing

@Suite("BAStore downloads") struct DownloadTests {
    @Test func storesEveryFieldAsGivenAndIsVisibleToOthersOnReturn() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let download = StoredDownload(
            appIdentifier: "com.example.game", identifier: "level-1", url: "https://cdn.example.com/level-1.pak",
            headers: [.init(name: "Authorization", value: "Bearer x"), .init(name: "X-Tag", value: "é \"q\"")],
            applicationGroupIdentifier: "group.com.example.game", priority: 90, isEssential: true,
            expectedSize: 1_048_576, sha256: String(repeating: "ab", count: 32), state: .created,
            partialPath: "/data/.ba-partial/level-1.part")
        let stored = try test.store.schedule(download)
        var expected = download
        expected.createdAt = test.clock.now
        expected.updatedAt = test.clock.now
        #expect(stored == expected)
        #expect(try test.store.download(uniqueIdentifier: download.uniqueIdentifier) == expected)
        // Committed when the call returned: another connection sees it while the store is open.
        #expect(try test.count("SELECT count(*) FROM download WHERE identifier = 'level-1'") == 1)
        #expect(try test.store.download(uniqueIdentifier: "no-such-id") == nil)

        let record = DownloadDescription(
            identifier: "level-2", url: "https://cdn.example.com/level-2.pak", priority: 10, fileSize: 0)
        let fromRecord = StoredDownload(record, appIdentifier: "com.example.game")
        #expect(fromRecord.expectedSize == nil && !fromRecord.uniqueIdentifier.isEmpty && fromRecord.state == .waiting)
    }

    @Test func duplicateActiveIdentifierIsRefusedButEndedOnesMayBeScheduledAgain() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        try test.registerApp("com.example.other")
        let first = try test.schedule("level-1")
        let duplicate = #expect(throws: BAStoreError.self) { try test.schedule("level-1") }
        #expect(duplicate?.code == .duplicateIdentifier)
        #expect(duplicate?.message.contains(first.uniqueIdentifier) == true)
        try test.schedule("level-1", app: "com.example.other")  // another app's namespace

        try test.store.markFinished(uniqueIdentifier: first.uniqueIdentifier, destination: "/data/level-1")
        let second = try test.schedule("level-1")
        try test.store.markFailed(
            uniqueIdentifier: second.uniqueIdentifier,
            error: .init(domain: "com.apple.backgroundassets.error", code: 102, message: "404"))
        let third = try test.schedule("level-1")
        #expect(
            try test.store.downloads(app: "com.example.game").map(\.state) == [.finished, .failed, .waiting])
        #expect(try test.store.downloads(app: "com.example.game").last?.uniqueIdentifier == third.uniqueIdentifier)

        // The same unique identifier twice (the same BADownload scheduled again) is a duplicate too.
        try test.store.markFinished(uniqueIdentifier: third.uniqueIdentifier, destination: "/data/level-1")
        var again = third
        again.state = .waiting
        let reused = #expect(throws: BAStoreError.self) { try test.store.schedule(again) }
        #expect(reused?.code == .duplicateIdentifier)

        // The partial unique index enforces the rule even for a writer that skips the store's check.
        try test.tamper { db in
            #expect(throws: DatabaseError.self) {
                try db.execute(
                    sql: """
                        INSERT INTO download (unique_identifier, app_id, identifier, url, priority, essential, state,
                            created_at, updated_at)
                        SELECT 'raw', app_id, identifier, url, priority, essential, 1, created_at, updated_at
                        FROM download WHERE app_id = 'com.example.other'
                        """)
            }
        }

        let unknownApp = #expect(throws: BAStoreError.self) { try test.schedule("x", app: "com.example.missing") }
        #expect(unknownApp?.code == .unknownApp)
        var ended = StoredDownload(appIdentifier: "com.example.game", identifier: "y", url: "https://h/y")
        ended.state = .finished
        let invalid = #expect(throws: BAStoreError.self) { try test.store.schedule(ended) }
        #expect(invalid?.code == .invalidArgument)
    }

    @Test func cancelDeletesTheActiveDownloadAndItsEvents() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let unknown = #expect(throws: BAStoreError.self) {
            try test.store.cancel(app: "com.example.game", identifier: "level-1")
        }
        #expect(unknown?.code == .notScheduled)

        let download = try test.schedule("level-1")
        try test.store.recordBegan(uniqueIdentifier: download.uniqueIdentifier, offset: 0, isForeground: false)
        let cancelled = try test.store.cancel(app: "com.example.game", identifier: "level-1")
        #expect(cancelled.uniqueIdentifier == download.uniqueIdentifier && cancelled.state == .downloading)
        #expect(try test.store.download(uniqueIdentifier: download.uniqueIdentifier) == nil)
        #expect(try test.count("SELECT count(*) FROM event") == 0)
        let twice = #expect(throws: BAStoreError.self) {
            try test.store.cancel(app: "com.example.game", identifier: "level-1")
        }
        #expect(twice?.code == .notScheduled)
        let late = #expect(throws: BAStoreError.self) {
            try test.store.recordProgress(uniqueIdentifier: download.uniqueIdentifier, bytesOnDisk: 10)
        }
        #expect(late?.code == .unknownDownload)

        // A finished download is no longer scheduled: cancelling it is refused and keeps it.
        let finished = try test.schedule("level-1")
        try test.store.markFinished(uniqueIdentifier: finished.uniqueIdentifier, destination: "/data/level-1")
        let ended = #expect(throws: BAStoreError.self) {
            try test.store.cancel(app: "com.example.game", identifier: "level-1")
        }
        #expect(ended?.code == .notScheduled)
        #expect(try test.store.download(uniqueIdentifier: finished.uniqueIdentifier)?.state == .finished)
    }

    @Test func activeDownloadsComeEssentialFirstThenByPriorityThenByAge() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        try test.registerApp("com.example.other")
        let plan: [(String, String, Int64, Bool)] = [
            ("low-old", "com.example.game", 10, false),
            ("high", "com.example.other", 90, false),
            ("essential-low", "com.example.game", 10, true),
            ("low-new", "com.example.other", 10, false),
            ("essential-high", "com.example.other", 90, true),
            ("done", "com.example.game", 100, true),
            ("same-time-1", "com.example.game", 50, false),
        ]
        for (identifier, app, priority, essential) in plan {
            let download = try test.schedule(identifier, app: app, priority: priority, essential: essential)
            if identifier == "done" {
                try test.store.markFinished(uniqueIdentifier: download.uniqueIdentifier, destination: "/d/done")
            }
            if identifier != "same-time-1" { test.clock.advance() }
        }
        try test.schedule("same-time-2", priority: 50)  // the same timestamp: scheduling order decides
        #expect(
            try test.store.activeDownloads().map(\.identifier) == [
                "essential-high", "essential-low", "high", "same-time-1", "same-time-2", "low-old", "low-new",
            ])
        #expect(try test.store.activeDownloadCount() == 7)  // "done" finished: not counted

        // The queue's order as identifiers (a listing's places), without those basd's engine holds.
        let active = try test.store.activeDownloads()
        let held = Set(active.filter { ["high", "low-old"].contains($0.identifier) }.map(\.uniqueIdentifier))
        let queued = try test.store.queuedDownloadIdentifiers(excluding: held)
        #expect(
            queued.compactMap { id in active.first { $0.uniqueIdentifier == id }?.identifier } == [
                "essential-high", "essential-low", "same-time-1", "same-time-2", "low-new",
            ])
        #expect(try test.store.queuedDownloadIdentifiers(excluding: []) == active.map(\.uniqueIdentifier))
    }

    @Test func promoteMarksAnActiveDownloadForeground() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let download = try test.schedule("level-1")
        test.clock.advance()
        let promoted = try test.store.promote(uniqueIdentifier: download.uniqueIdentifier)
        #expect(promoted.isForeground && promoted.updatedAt == test.clock.now)
        #expect(try test.store.download(uniqueIdentifier: download.uniqueIdentifier) == promoted)
        try test.store.markFinished(uniqueIdentifier: download.uniqueIdentifier, destination: "/d/level-1")
        for uniqueIdentifier in [download.uniqueIdentifier, "no-such-id"] {
            let error = #expect(throws: BAStoreError.self) {
                try test.store.promote(uniqueIdentifier: uniqueIdentifier)
            }
            #expect(error?.code == .notScheduled)
        }
    }

    @Test func transfersRecordBytesValidatorAndEnds() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let download = try test.schedule("level-1")
        let id = download.uniqueIdentifier
        try test.store.recordBegan(uniqueIdentifier: id, offset: 0, isForeground: false, partialPath: "/d/p.part")
        try test.store.recordProgress(uniqueIdentifier: id, bytesOnDisk: 4096, totalBytes: 8192, validator: "\"v1\"")
        try test.store.recordProgress(uniqueIdentifier: id, bytesOnDisk: 6000)
        var stored = try #require(try test.store.download(uniqueIdentifier: id))
        #expect(stored.state == .downloading && stored.attempts == 1 && stored.partialPath == "/d/p.part")
        #expect(stored.bytesOnDisk == 6000 && stored.validator == "\"v1\"", "a nil validator keeps the stored one")
        try test.store.recordPaused(uniqueIdentifier: id, bytesOnDisk: 6000)
        #expect(try test.store.download(uniqueIdentifier: id)?.state == .waiting)
        try test.store.recordBegan(uniqueIdentifier: id, offset: 6000, isForeground: true)
        let failure = StoredDownload.Failure(
            domain: "com.apple.backgroundassets.error", code: 102, message: "server answered 404")
        try test.store.markFailed(uniqueIdentifier: id, error: failure)
        stored = try #require(try test.store.download(uniqueIdentifier: id))
        #expect(stored.state == .failed && stored.attempts == 2 && stored.isForeground && stored.lastError == failure)

        expectStoreError(.downloadEnded) { try test.store.recordProgress(uniqueIdentifier: id, bytesOnDisk: 1) }
        expectStoreError(.downloadEnded) { try test.store.markFinished(uniqueIdentifier: id, destination: "/d/x") }
        expectStoreError(.downloadEnded) { try test.store.markFailed(uniqueIdentifier: id, error: failure) }
        #expect(try test.count("SELECT count(*) FROM event WHERE kind = 'failed'") == 1)
    }
}
