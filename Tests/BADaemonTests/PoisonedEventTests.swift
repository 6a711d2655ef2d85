import BAAssetServer
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 19, "one event whose `finished` call crashes starves every later event": six downloads
/// finish with no app listening; the extension crashes on the third one's `finished` call every
/// time. Before, after three failures that event was kept "for the app's next connection" and
/// none of the app's later events reached the extension again (the walk stopped at it, and the
/// three crashes quarantined the extension), also after a restart. Now it is parked: the others
/// go on, the park survives a restart, and the app's next connection gets it. Real basd, real
/// runners, a real crashing plugin (`BATestEvents` crashes on identifiers starting "crash").
@Suite("a poisoned event is parked", .timeLimit(.minutes(3)))
struct PoisonedEventTests {
    static let app = DownloadServiceTests.app

    static func calls(_ log: String, of name: String) -> Int {
        log.split(separator: "\n").filter { $0.contains("BATestEvents: download_finished \(name) call ") }.count
    }

    @Test("six finished, the third crashes its call every time: parked after 3, the other five reach the extension")
    func parkedAndTheRestFlow() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let names = ["a", "b", "crash-c", "d", "e", "f"]
        for name in names + ["g"] { server.setFile("/" + name, contents: Array(name.utf8)) }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try DownloadServiceTests.register(daemon, extensionPath: BuildProducts.library("BATestEvents"))
        // A follower of every event (what `ba events --follow` is): it is told of the park.
        let followed = EventInbox()
        let follower = try DaemonClient(
            socketPath: daemon.socketPath, client: ClientInfo(role: .cli, pid: getpid()),
            onEvent: { followed.append($0) })
        defer { follower.close() }
        try follower.call(.subscribeEvents)

        try await EventBatchTests.finishAndQuit(names, daemon: daemon, server: server, inOrder: true)
        let log = try await CLIQueries.poll(
            "crash-c parked and d, e, f handled by the extension", daemon, timeout: 90, read: { daemon.standardError },
            until: { log in ["d", "e", "f"].allSatisfy { Self.calls(log, of: $0) == 1 } })
        #expect(Self.calls(log, of: "crash-c") == 3, "three attempts, then parked: \(log)")
        #expect(Self.calls(log, of: "a") == 1 && Self.calls(log, of: "b") == 1)
        #expect(log.contains("failed 3 times on event"), "\(log)")
        // One poisoned event counts once toward quarantine: the extension is not quarantined.
        let app = try await CLIQueries.app(daemon)
        #expect(app["quarantine"] == nil, "\(app)")

        // Visible: the follower got the event again, marked parked; `ba downloads` says why.
        let parkedEvents = try await followed.wait("the parked event followed") { $0.contains { $0.parked != nil } }
        let parked = try #require(parkedEvents.first { $0.parked != nil })
        #expect(parked.identifier == "crash-c" && parked.kind == .finished, "\(parked)")
        #expect(parked.parked?.contains("failed 3 times") == true, "\(parked)")
        let rows = try await CLIQueries.downloadRows(daemon, app: Self.app)
        let withParked = rows.filter { $0["parkedEvent"] != nil }
        #expect(withParked.map { $0["identifier"] as? String } == ["crash-c"], "\(rows)")
        let reason = try #require(withParked.first?["parkedEvent"] as? String)
        #expect(reason.contains("finished event") && reason.contains("crashed"), "\(reason)")
        let table = try await runProcess(
            CLIQueries.ba, ["downloads", "--app", Self.app, "--socket", daemon.socketPath])
        #expect(table.stdout.contains("finished (event parked)"), "\(table.stdout)")

        // A restart: the park is in the store. A new event (g) goes to the extension at once,
        // past crash-c, which is not tried again.
        daemon.send(SIGTERM)
        #expect(daemon.waitForExit(timeout: 20) == 0)
        follower.close()
        let again = try await DaemonProcess.start(directory: daemon.directory)
        defer { again.kill() }
        try await EventBatchTests.finishAndQuit(["g"], daemon: again, server: server)
        let secondLog = try await CLIQueries.poll(
            "g handled by the extension after the restart", again, timeout: 60, read: { again.standardError },
            until: { Self.calls($0, of: "g") == 1 })
        #expect(Self.calls(secondLog, of: "crash-c") == 0, "a parked event is not tried again: \(secondLog)")
        let rowsAfter = try await CLIQueries.downloadRows(again, app: Self.app)
        #expect(rowsAfter.filter { $0["parkedEvent"] != nil }.map { $0["identifier"] as? String } == ["crash-c"])

        // The app connects: it is sent the parked event (its delegate is the other consumer) and
        // nothing the extension handled; its acknowledgement delivers it.
        let inbox = EventInbox()
        let client = try DownloadServiceTests.appClient(again, inbox: inbox)
        defer { client.close() }
        try client.call(.subscribeEvents)
        let events = try await inbox.wait("the parked event sent to the app") { $0.contains { $0.kind == .finished } }
        let finished = events.filter { $0.kind == .finished }
        #expect(finished.map(\.identifier) == ["crash-c"], "\(finished)")
        let sequence = try #require(finished.first?.sequence)
        try client.call(.acknowledgeEvents(throughSequence: sequence))
        _ = try await CLIQueries.pollDownloads(
            "no parked event left", again, app: Self.app, timeout: 30,
            until: { rows in rows.allSatisfy { $0["parkedEvent"] == nil } })
    }
}
