import BAAssetServer
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

/// Apple's sample moves a finished file with `FileManager.replaceItemAt(_:withItemAt:)`, which on
/// Linux throws for a destination that does not exist yet; the sample only logs the error. basd then
/// keeps the file for the app instead of deleting it (issue 19, item 9). Real basd, real runner,
/// Apple's handler unchanged (Plugins/TestPlugins/BATestAppleSample).
@Suite("a finished file the extension did not move", .timeLimit(.minutes(3)))
struct UnmovedFinishedFileTests {
    static let group = DownloadServiceTests.group

    @Test("is kept for the app, its later events still go to the extension, and the app gets the file")
    func keptForTheApp() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let contents = [
            "a": DownloadServiceTests.bytes(3_000, seed: 1), "b": DownloadServiceTests.bytes(2_000, seed: 2),
        ]
        for (name, bytes) in contents { server.setFile("/" + name, contents: bytes) }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try DownloadServiceTests.register(daemon, extensionPath: BuildProducts.library("BATestAppleSample"))

        // The app schedules "a" and quits before handling it: the extension gets the file, its
        // replaceItemAt fails, and the call ends ok.
        try await EventBatchTests.finishAndQuit(["a"], daemon: daemon, server: server)
        let first = try await CLIQueries.poll(
            "the extension's call for a", daemon, timeout: 60, read: { try await EventBatchTests.runs(daemon) },
            until: { runs in runs.contains { $0["event"] as? String == "finished" } })
        #expect(first.filter { $0["event"] as? String == "finished" }.map { $0["verdict"] as? String } == ["ok"])

        // A later event of the app is not held up by the kept one: it goes to the extension too.
        try await EventBatchTests.finishAndQuit(["b"], daemon: daemon, server: server)
        let second = try await CLIQueries.poll(
            "the extension's call for b", daemon, timeout: 60, read: { try await EventBatchTests.runs(daemon) },
            until: { runs in runs.filter { $0["event"] as? String == "finished" }.count >= 2 })
        #expect(second.filter { $0["event"] as? String == "finished" }.allSatisfy { $0["verdict"] as? String == "ok" })

        // The app's next connection gets both files, whole; its acknowledgement removes them.
        let inbox = EventInbox()
        let app = try DownloadServiceTests.appClient(daemon, inbox: inbox)
        defer { app.close() }
        try app.call(.subscribeEvents)
        let events = try await CLIQueries.poll(
            "a and b handed to the app", daemon, timeout: 30, read: { inbox.all },
            until: { events in Set(events.filter { $0.kind == .finished }.map(\.identifier)) == ["a", "b"] })
        let finished = events.filter { $0.kind == .finished }
        for event in finished {
            let path = try #require(event.destination)
            #expect(
                FileManager.default.contents(atPath: path).map(Array.init) == contents[event.identifier],
                "\(event.identifier) at \(path)\n\(daemon.standardError)")
        }
        #expect(await daemon.logged("did not move the finished file"), "\(daemon.standardError)")
        try app.call(.acknowledgeEvents(throughSequence: try #require(finished.map(\.sequence).max())))
        for event in finished {
            #expect(!FileManager.default.fileExists(atPath: try #require(event.destination)))
        }
        // Each was handed to the extension once.
        let runs = try await EventBatchTests.runs(daemon)
        #expect(runs.filter { $0["event"] as? String == "finished" }.count == 2, "\(runs)")
    }

    @Test(
        "Foundation's replaceItemAt over an existing file swaps them on Linux: basd says so and hands over what is left"
    )
    func replaceOverAnExistingFileIsReported() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let downloaded = DownloadServiceTests.bytes(4_000, seed: 3)
        server.setFile("/c", contents: downloaded)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try DownloadServiceTests.register(daemon, extensionPath: BuildProducts.library("BATestAppleSample"))
        // The app's older copy, where Apple's sample moves "c".
        let older = Data("older copy".utf8)
        let container = daemon.stateDirectory + "/groups/" + Self.group
        _ = try await CLIQueries.poll(
            "the container", daemon, timeout: 30, read: { FileManager.default.fileExists(atPath: container) },
            until: { $0 })
        try older.write(to: URL(fileURLWithPath: container + "/c"))

        try await EventBatchTests.finishAndQuit(["c"], daemon: daemon, server: server)
        _ = try await CLIQueries.poll(
            "basd to report the replaced file", daemon, timeout: 60, read: { daemon.standardError },
            until: { $0.contains("is \(older.count) bytes, not the \(downloaded.count) downloaded") })
        // Foundation moved the older copy onto the finished file's path and removed the destination.
        #expect(!FileManager.default.fileExists(atPath: container + "/c"))
    }
}
