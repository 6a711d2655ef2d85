import BAAssetServer
import BACore
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Events waiting for an extension go to it many at a time: one runner process calls its entry
/// point for each, in order (issue 12, "events for an extension crawl": before, each event was a
/// runner of its own, about 84 ms apart). Real basd, real runners, real plugins.
@Suite("many events, one runner", .timeLimit(.minutes(3)))
struct EventBatchTests {
    static let app = DownloadServiceTests.app
    static let group = DownloadServiceTests.group

    /// Schedules `names` from a subscribed app (`inOrder`: each after the one before finished, so
    /// the events are in that order), waits for all of them to finish, and quits the app without
    /// acknowledging anything: the finished events are left to the extension.
    static func finishAndQuit(
        _ names: [String], daemon: DaemonProcess, server: AssetServer, inOrder: Bool = false
    ) async throws {
        let inbox = EventInbox()
        let client = try DownloadServiceTests.appClient(daemon, inbox: inbox)
        defer { client.close() }
        try client.call(.subscribeEvents)
        for name in names {
            _ = try client.call(
                .schedule(
                    DownloadDescription(
                        identifier: name, url: server.url("/" + name), applicationGroupIdentifier: Self.group)))
            if inOrder {
                // Polled, not waited for: a test thread blocked for seconds starves the others.
                _ = try await CLIQueries.poll(
                    "\(name) finished", daemon, timeout: 60, read: { inbox.all },
                    until: { events in events.contains { $0.kind == .finished && $0.identifier == name } })
            }
        }
        // Of these downloads: an earlier one kept for the app (parked) is handed to this connection too.
        _ = try await CLIQueries.poll(
            "\(names.count) finished events", daemon, timeout: 60, read: { inbox.all },
            until: { events in
                Set(events.filter { $0.kind == .finished && names.contains($0.identifier) }.map(\.identifier))
                    == Set(names)
            })
    }

    static func runs(_ daemon: DaemonProcess) async throws -> [[String: Any]] {
        try await CLIQueries.app(daemon)["lastRuns"] as? [[String: Any]] ?? []
    }

    @Test("600 finished events waiting for an extension go to it in two runners, each event once")
    func backlogInTwoRunners() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let names = (1...600).map { "asset-\($0)" }
        for (index, name) in names.enumerated() {
            server.setFile("/" + name, contents: DownloadServiceTests.bytes(1_000 + index, seed: UInt8(index % 251)))
        }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try DownloadServiceTests.register(daemon, extensionPath: BuildProducts.library("SampleCExtension"))
        try await Self.finishAndQuit(names, daemon: daemon, server: server)

        // The C sample moves each finished file into the container's Assets folder.
        let assets = daemon.stateDirectory + "/groups/" + Self.group + "/Assets"
        let moved = try await CLIQueries.poll(
            "600 files moved by the extension", daemon, timeout: 90,
            read: { (try? FileManager.default.contentsOfDirectory(atPath: assets)) ?? [] },
            until: { $0.count == names.count })
        #expect(Set(moved) == Set(names))
        let runs = try await CLIQueries.poll(
            "the runs recorded", daemon, timeout: 30, read: { try await Self.runs(daemon) },
            until: { runs in runs.filter { $0["event"] as? String == "finished" }.count >= 2 })
        let finished = runs.filter { $0["event"] as? String == "finished" }
        // 512 events at most per runner: two runners, not 600.
        #expect(finished.count == 2, "\(runs)")
        #expect(finished.allSatisfy { $0["verdict"] as? String == "ok" }, "\(runs)")
        #expect(
            Set(finished.compactMap { $0["detail"] as? String })
                == ["512 events in one runner", "88 events in one runner"], "\(runs)")
        #expect(!daemon.standardError.contains("ended crashed"), "\(daemon.standardError)")
    }

    @Test("a crash at the third of five events: the two before are delivered, the crash counts once, the rest go on")
    func crashMidway() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let names = ["a", "b", "crash-c", "d", "e"]
        for name in names { server.setFile("/" + name, contents: Array(name.utf8)) }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try DownloadServiceTests.register(daemon, extensionPath: BuildProducts.library("BATestEvents"))
        try await Self.finishAndQuit(names, daemon: daemon, server: server, inOrder: true)

        // Three attempts (basd's default), each a runner that starts at crash-c and crashes there;
        // then crash-c is parked and d and e go to the extension (issue 19).
        _ = try await CLIQueries.poll(
            "the event parked and the rest handled", daemon, timeout: 60, read: { daemon.standardError },
            until: { $0.contains("parked: it waits for the app's next connection") && $0.contains(" e call ") })
        let runs = try await Self.runs(daemon)
        let crashed = runs.filter { $0["verdict"] as? String == "crashed" }
        #expect(crashed.count == 3, "one crash counted per runner, not per event left: \(runs)")
        let details = crashed.compactMap { $0["detail"] as? String }
        #expect(details.count == 3, "\(runs)")
        #expect(details.contains { $0.contains("event 3 of 5 in one runner; the 2 before it ok") }, "\(details)")
        #expect(details.filter { $0.contains("event 1 of 3 in one runner") }.count == 2, "\(details)")
        let calls = daemon.standardError.split(separator: "\n").filter {
            $0.contains("BATestEvents: download_finished")
        }
        #expect(calls.filter { $0.contains(" a call ") }.count == 1, "a was called once: \(calls)")
        #expect(calls.filter { $0.contains(" crash-c call ") }.count == 3, "crash-c was tried 3 times: \(calls)")
        #expect(calls.filter { $0.contains(" d call ") }.count == 1, "d was called once, after the park: \(calls)")
        #expect(calls.last?.contains(" e call ") == true, "\(calls)")

        // The app's next connection gets what the extension did not handle: crash-c alone (the
        // extension took the files of the others).
        let inbox = EventInbox()
        let client = try DownloadServiceTests.appClient(daemon, inbox: inbox)
        defer { client.close() }
        try client.call(.subscribeEvents)
        let events = try await CLIQueries.poll(
            "the event left for the app", daemon, timeout: 30, read: { inbox.all },
            until: { events in events.contains { $0.kind == .finished } })
        #expect(events.filter { $0.kind == .finished }.map(\.identifier) == ["crash-c"])
    }
}
