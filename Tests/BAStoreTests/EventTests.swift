import BAStore
import Foundation
import GRDB
import Testing

@Suite("BAStore events") struct EventTests {
    @Test func finishedAndFailedAppendExactlyOneEventEach() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let good = try test.schedule("good")
        let bad = try test.schedule("bad")
        #expect(try test.count("SELECT count(*) FROM event") == 0, "scheduling appends no event")

        let finished = try test.store.markFinished(
            uniqueIdentifier: good.uniqueIdentifier, destination: "/data/good", size: 1234)
        #expect(finished.kind == .finished && finished.downloadUniqueIdentifier == good.uniqueIdentifier)
        #expect(try test.payload(finished) == #"{"destination":"/data/good","size":1234}"#)
        let failed = try test.store.markFailed(
            uniqueIdentifier: bad.uniqueIdentifier,
            error: .init(domain: "com.apple.backgroundassets.error", code: 202, message: "host not allowed"))
        #expect(
            try test.payload(failed)
                == #"{"code":202,"domain":"com.apple.backgroundassets.error","message":"host not allowed"}"#)
        #expect(failed.sequence > finished.sequence)

        #expect(try test.count("SELECT count(*) FROM event") == 2)
        #expect(
            try test.count(
                "SELECT count(*) FROM event WHERE download_id = ? AND kind = 'finished'", [good.uniqueIdentifier]) == 1)
        #expect(
            try test.count(
                "SELECT count(*) FROM event WHERE download_id = ? AND kind = 'failed'", [bad.uniqueIdentifier]) == 1)
        #expect(try test.store.undeliveredEvents(app: "com.example.game") == [finished, failed])
    }

    @Test func aStateChangeAndItsEventCommitTogetherOrNotAtAll() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let download = try test.schedule("level-1")
        // Make appending any event fail, as a full disk or a crash between the two writes would.
        try test.tamper { db in
            try db.execute(
                sql: "CREATE TRIGGER refuse_events BEFORE INSERT ON event BEGIN SELECT RAISE(ABORT, 'no'); END")
        }
        expectStoreError(.database) {
            try test.store.markFinished(uniqueIdentifier: download.uniqueIdentifier, destination: "/d/level-1")
        }
        expectStoreError(.database) {
            try test.store.markFailed(
                uniqueIdentifier: download.uniqueIdentifier, error: .init(domain: "d", code: 1, message: "m"))
        }
        expectStoreError(.database) {
            try test.store.recordBegan(uniqueIdentifier: download.uniqueIdentifier, offset: 0, isForeground: true)
        }
        let unchanged = try #require(try test.store.download(uniqueIdentifier: download.uniqueIdentifier))
        #expect(unchanged.state == .waiting && unchanged.destinationPath == nil && unchanged.attempts == 0)
        #expect(try test.count("SELECT count(*) FROM event") == 0)

        try test.tamper { db in try db.execute(sql: "DROP TRIGGER refuse_events") }
        try test.store.markFinished(uniqueIdentifier: download.uniqueIdentifier, destination: "/d/level-1")
        #expect(try test.store.download(uniqueIdentifier: download.uniqueIdentifier)?.state == .finished)
        #expect(try test.count("SELECT count(*) FROM event") == 1)
    }

    @Test func eventsComeInOrderPerAppAndDeliveryIsAcknowledgedUpToASequence() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        try test.registerApp("com.example.other")
        var appended: [String: [StoredEvent]] = [:]
        for index in 0..<4 {
            for app in ["com.example.game", "com.example.other"] {
                let download = try test.schedule("asset-\(index)", app: app)
                let began = try test.store.recordBegan(
                    uniqueIdentifier: download.uniqueIdentifier, offset: 0, isForeground: false)
                let finished = try test.store.markFinished(
                    uniqueIdentifier: download.uniqueIdentifier, destination: "/d/\(index)")
                appended[app, default: []] += [began, finished]
            }
        }
        let game = try #require(appended["com.example.game"])
        let events = try test.store.undeliveredEvents(app: "com.example.game")
        #expect(events == game)
        #expect(events.map(\.sequence) == events.map(\.sequence).sorted())
        #expect(events.map(\.kind) == [.began, .finished, .began, .finished, .began, .finished, .began, .finished])
        #expect(try test.store.undeliveredEvents(app: "com.example.game", limit: 3) == Array(game.prefix(3)))
        #expect(try test.store.undeliveredEvents(app: "com.example.game", after: game[2].sequence) == Array(game[3...]))

        // Acknowledge through the third: only those are hidden, the other app's are untouched.
        #expect(try test.store.markDelivered(app: "com.example.game", through: game[2].sequence) == 3)
        #expect(try test.store.undeliveredEvents(app: "com.example.game") == Array(game[3...]))
        #expect(try test.store.undeliveredEvents(app: "com.example.other") == appended["com.example.other"])
        // Idempotent: again, or an older sequence, changes nothing.
        #expect(try test.store.markDelivered(app: "com.example.game", through: game[2].sequence) == 0)
        #expect(try test.store.markDelivered(app: "com.example.game", through: game[0].sequence) == 0)
        #expect(try test.store.undeliveredEvents(app: "com.example.game") == Array(game[3...]))
        // The other app's acknowledgement never touches this app's events.
        #expect(try test.store.markDelivered(app: "com.example.other", through: Int64.max) == 8)
        #expect(try test.store.undeliveredEvents(app: "com.example.game") == Array(game[3...]))
        #expect(try test.count("SELECT count(*) FROM event WHERE delivered_at IS NOT NULL") == 11)
    }

    @Test func onlyTheLatestUndeliveredProgressIsKept() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let id = try test.schedule("level-1").uniqueIdentifier
        try test.store.recordBegan(uniqueIdentifier: id, offset: 0, isForeground: false)
        let first = try test.store.recordProgress(uniqueIdentifier: id, bytesOnDisk: 100, totalBytes: 1000)
        try test.store.markDelivered(app: "com.example.game", through: first.sequence)
        try test.store.recordProgress(uniqueIdentifier: id, bytesOnDisk: 200, totalBytes: 1000)
        let last = try test.store.recordProgress(uniqueIdentifier: id, bytesOnDisk: 300)
        #expect(try test.payload(last) == #"{"bytesWritten":300}"#)
        let events = try test.store.undeliveredEvents(app: "com.example.game")
        #expect(events == [last])
        #expect(try test.count("SELECT count(*) FROM event WHERE kind = 'progress'") == 2, "delivered ones stay")
        // Progress then an end: both undelivered, in order.
        let finished = try test.store.markFinished(uniqueIdentifier: id, destination: "/d/level-1")
        #expect(try test.store.undeliveredEvents(app: "com.example.game") == [last, finished])
    }

    @Test func otherEventsCarryTheirPayloads() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let id = try test.schedule("level-1").uniqueIdentifier
        let began = try test.store.recordBegan(uniqueIdentifier: id, offset: 512, isForeground: true)
        let paused = try test.store.recordPaused(uniqueIdentifier: id, bytesOnDisk: 1024)
        let challenge = try test.store.recordNeedsCredentials(uniqueIdentifier: id, challenge: #"Basic realm="cdn""#)
        #expect(try test.payload(began) == #"{"isForeground":true,"offset":512}"#)
        #expect(try test.payload(paused) == #"{"bytesOnDisk":1024}"#)
        #expect(try test.payload(challenge) == #"{"challenge":"Basic realm=\"cdn\""}"#)
        #expect(
            try test.store.undeliveredEvents(app: "com.example.game").map(\.kind) == [
                .began, .paused, .needsCredentials,
            ])
    }

    @Test func payloadsAreWhatJSONEncoderWrites() throws {
        struct Failed: Encodable {
            var code: Int
            var domain: String
            var message: String
        }
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let id = try test.schedule("level-1").uniqueIdentifier
        let message = "a/b \"c\" \\ \n\t\r\u{08}\u{0c}\u{01}\u{1f}\u{7f} é 😀"
        let failed = try test.store.markFailed(
            uniqueIdentifier: id, error: .init(domain: "d/x", code: -7, message: message))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let expected = String(
            decoding: try encoder.encode(Failed(code: -7, domain: "d/x", message: message)), as: UTF8.self)
        #expect(try test.payload(failed) == expected)
        #expect(try test.store.event(sequence: failed.sequence)?.change == failed.change)
    }

    @Test func acknowledgingReturnsTheFinishedEventsItMarked() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        let a = try test.schedule("a").uniqueIdentifier
        let b = try test.schedule("b").uniqueIdentifier
        let c = try test.schedule("c").uniqueIdentifier
        let began = try test.store.recordBegan(uniqueIdentifier: a, offset: 0, isForeground: false)
        let finishedA = try test.store.markFinished(uniqueIdentifier: a, destination: "/d/a", size: 1)
        let finishedB = try test.store.markFinished(uniqueIdentifier: b, destination: "/d/b", size: 2)
        try test.store.parkEvent(app: "com.example.game", sequence: finishedB.sequence, reason: "test")
        let finishedC = try test.store.markFinished(uniqueIdentifier: c, destination: "/d/c", size: 3)
        let marked = try test.store.acknowledge(app: "com.example.game", through: finishedB.sequence)
        #expect(marked.map(\.change) == [finishedA.change, finishedB.change], "finished ones only, parked too")
        #expect(try test.store.undeliveredEvents(app: "com.example.game").map(\.sequence) == [finishedC.sequence])
        #expect(began.sequence < finishedA.sequence)
        #expect(try test.store.acknowledge(app: "com.example.game", through: finishedB.sequence).isEmpty, "idempotent")
    }

    @Test func pruningDeletesOnlyOldDeliveredEvents() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        var sequences: [Int64] = []
        for index in 0..<3 {
            let id = try test.schedule("asset-\(index)").uniqueIdentifier
            sequences.append(try test.store.markFinished(uniqueIdentifier: id, destination: "/d/\(index)").sequence)
        }
        try test.store.markDelivered(app: "com.example.game", through: sequences[0])
        test.clock.advance(seconds: 3600)
        try test.store.markDelivered(app: "com.example.game", through: sequences[1])
        #expect(try test.store.pruneDeliveredEvents(olderThan: test.clock.now.addingTimeInterval(-60)) == 1)
        #expect(try test.store.pruneDeliveredEvents(olderThan: test.clock.now.addingTimeInterval(1)) == 1)
        #expect(try test.store.undeliveredEvents(app: "com.example.game").map(\.sequence) == [sequences[2]])
        #expect(try test.count("SELECT count(*) FROM event") == 1)

        // Sequences are never reused, even when the newest events were pruned.
        try test.store.markDelivered(app: "com.example.game", through: sequences[2])
        #expect(try test.store.pruneDeliveredEvents(olderThan: test.clock.now.addingTimeInterval(1)) == 1)
        let id = try test.schedule("asset-3").uniqueIdentifier
        #expect(try test.store.markFinished(uniqueIdentifier: id, destination: "/d/3").sequence > sequences[2])
    }

    /// Issue 19: a parked event is the app's alone. The extension's view skips it and its
    /// acknowledgements leave it undelivered; the app's view includes it and its acknowledgement
    /// delivers it. Parked survives reopening the file.
    @Test func aParkedEventIsSkippedByTheExtensionsViewAndKeptForTheApp() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        var events: [StoredEvent] = []
        for index in 0..<4 {
            let id = try test.schedule("asset-\(index)").uniqueIdentifier
            events.append(try test.store.markFinished(uniqueIdentifier: id, destination: "/d/\(index)"))
        }
        let app = "com.example.game"
        #expect(try test.store.parkEvent(app: app, sequence: events[1].sequence, reason: "crashed 3 times"))
        #expect(try !test.store.parkEvent(app: app, sequence: events[1].sequence, reason: "again"), "already parked")

        let extensionView = try test.store.undeliveredEvents(app: app, includingParked: false)
        #expect(extensionView.map(\.sequence) == [events[0], events[2], events[3]].map(\.sequence))
        // The extension handled everything it saw: the parked event stays.
        #expect(try test.store.markDelivered(app: app, through: events[3].sequence, includingParked: false) == 3)
        let appView = try test.store.undeliveredEvents(app: app)
        #expect(appView.map(\.sequence) == [events[1].sequence])
        #expect(appView.first?.parkedReason == "crashed 3 times" && appView.first?.parkedAt != nil)
        let parked = try test.store.parkedEvents(downloads: events.map(\.downloadUniqueIdentifier))
        #expect(parked.keys.sorted() == [events[1].downloadUniqueIdentifier])
        #expect(try test.store.event(sequence: events[1].sequence)?.parkedReason == "crashed 3 times")

        // Parked survives reopening; the app's acknowledgement delivers it.
        try test.store.close()
        let reopened = try BAStore.open(path: test.path)
        defer { try? reopened.close() }
        #expect(try reopened.undeliveredEvents(app: app, includingParked: false).isEmpty)
        #expect(try reopened.undeliveredEvents(app: app).map(\.sequence) == [events[1].sequence])
        #expect(try reopened.markDelivered(app: app, through: events[1].sequence) == 1)
        #expect(try reopened.parkedEvents(downloads: events.map(\.downloadUniqueIdentifier)).isEmpty)
        #expect(try !reopened.parkEvent(app: app, sequence: events[1].sequence, reason: "delivered"))
    }
}
