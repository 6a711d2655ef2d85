import BAAssetServer
import BACore
import BADaemonProtocol
import BAStore
import BATestSupport
import Foundation
import Testing

@testable import BADaemon

/// basd hands its engine a window of the queue, not the whole queue (issue 12: "nothing per
/// queued download but a row"): the rest waits in the store and goes to the engine, in queue
/// order, as transfers end. basd's services in this process over a real store, engine and
/// loopback server.
@Suite("the engine's window of the queue", .timeLimit(.minutes(2)))
struct EngineWindowTests {
    static let app = SchedulerServiceTests.app

    @Test("300 downloads through a window of 8: never more than 8 in the engine, all finish, in queue order")
    func windowOfEight() async throws {
        let fixture = try await ServicesFixture()
        defer { fixture.stop() }
        let (server, store) = (fixture.server, fixture.store)
        let harness = try fixture.start { $0.engineWindow = 8 }
        let names = (0..<300).map { String(format: "d%03d", $0) }
        for (index, name) in names.enumerated() {
            server.setFile("/\(name).bin", contents: SampleAppFixture.bytes(2_000 + index, seed: UInt8(index % 251)))
        }
        let app = try #require(try store.app(Self.app))
        // Scheduled in one turn of the executor: only the window reaches the engine.
        let heldAfterScheduling = try harness.service.queue.syncThrowing {
            for name in names {
                try harness.service.transfers.schedule(
                    DownloadDescription(identifier: name, url: server.url("/\(name).bin")), for: app, contentRequest: 0)
            }
            // One more, of higher priority than every queued one: it does not wait behind them.
            try harness.service.transfers.schedule(
                DownloadDescription(identifier: "urgent", url: server.url("/d000.bin"), priority: 90), for: app,
                contentRequest: 0)
            return harness.service.transfers.window.inEngineCount
        }
        #expect(heldAfterScheduling == 9, "the window and the download that outranks it")

        var most = 0
        let deadline = Date(timeIntervalSinceNow: 60)
        var finished: [StoredDownload] = []
        while finished.count < names.count + 1 {
            most = max(most, harness.service.queue.sync { harness.service.transfers.window.inEngineCount })
            finished = try store.downloads(app: Self.app).filter { $0.state == .finished }
            guard Date() < deadline else {
                throw HarnessError("\(finished.count) of \(names.count + 1) finished: \(harness.log.all.suffix(20))")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(most <= 9, "the engine held \(most) transfers at once")
        #expect(harness.service.queue.sync { harness.service.transfers.window.parked } == false)
        // In queue order, the window 8 wide: a download starts once all but 8 of those before it
        // ended, and only those in the engine with it can end after it.
        let order = try store.undeliveredEvents(app: Self.app, after: 0, limit: 10_000)
            .filter { $0.kind == .finished }
            .compactMap { event in finished.first { $0.uniqueIdentifier == event.downloadUniqueIdentifier }?.identifier
            }
            .filter { $0 != "urgent" }
        #expect(order.count == names.count)
        for (position, name) in order.enumerated() {
            let scheduled = try #require(names.firstIndex(of: name))
            #expect(abs(position - scheduled) <= 9, "\(name), scheduled \(scheduled)th, finished \(position)th")
        }
    }
}

extension EngineWindowTests {
    @Test("after a restart with 40 queued and a window of 8: the engine gets 8, then the rest as they end")
    func restartWithAQueue() async throws {
        let fixture = try await ServicesFixture()
        defer { fixture.stop() }
        let (server, store) = (fixture.server, fixture.store)
        // What a basd that died left: 40 active rows, one of them essential.
        for index in 0..<40 {
            let name = String(format: "q%02d", index)
            server.setFile("/\(name).bin", contents: SampleAppFixture.bytes(1_000 + index, seed: UInt8(index)))
            var download = StoredDownload(
                appIdentifier: Self.app, identifier: name, url: server.url("/\(name).bin"),
                applicationGroupIdentifier: SchedulerServiceTests.group, expectedSize: Int64(1_000 + index))
            download.isEssential = index == 39
            try store.schedule(download)
        }
        let harness = try fixture.start { $0.engineWindow = 8 }
        // The essential one and the window: all read at start, no more.
        let (heldAtStart, essentialHeld) = harness.service.queue.sync {
            let transfers = harness.service.transfers
            return (transfers.window.inEngineCount, transfers.window.inEngine.values.contains(.max))
        }
        #expect(heldAtStart <= 9 && heldAtStart >= 1, "\(heldAtStart) in the engine at start")
        #expect(essentialHeld || heldAtStart < 9)
        let deadline = Date(timeIntervalSinceNow: 60)
        while try store.downloads(app: Self.app).filter({ $0.state == .finished }).count < 40 {
            #expect(harness.service.queue.sync { harness.service.transfers.window.inEngineCount } <= 9)
            guard Date() < deadline else { throw HarnessError("not all finished: \(harness.log.all.suffix(20))") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// What an extension call is handed as the app's current downloads stays bounded whatever the
/// queue (issue 12: 100,000 queued would not fit the runner protocol's 4 MiB frame).
@Suite("current downloads handed to an extension", .timeLimit(.minutes(1)))
struct CurrentDownloadsLimitTests {
    @Test("an app with more active downloads than the limit: its extension sees its oldest, and basd says so")
    func bounded() async throws {
        let fixture = try await ServicesFixture()
        defer { fixture.stop() }
        let (server, store) = (fixture.server, fixture.store)
        let harness = try fixture.start { $0.currentDownloadsLimit = 3 }
        let app = try #require(try store.app(SchedulerServiceTests.app))
        let seen = try harness.service.queue.syncThrowing {
            // Read in the same turn of the executor as they are scheduled: all five are active.
            for index in 0..<5 {
                try harness.service.transfers.schedule(
                    DownloadDescription(identifier: "d\(index)", url: server.url("/never-\(index).bin")), for: app,
                    contentRequest: 0)
            }
            return harness.service.extensions.currentDownloads(of: app).map(\.identifier)
        }
        #expect(seen == ["d0", "d1", "d2"])
        #expect(
            harness.log.all.contains {
                $0.contains("has more than 3 active downloads; its extension sees the oldest 3")
            })
    }
}

/// A loopback server, a state folder with the app registered (no extension), and basd's services
/// in this process once ``start(_:)`` is called; ``stop()`` ends them in order.
final class ServicesFixture {
    let server: AssetServer
    let directory: TemporaryDirectory
    let clock = ManualWallClock(SchedulerServiceTests.start)
    let stateDirectory: String
    let store: BAStore
    private var harness: ServiceHarness?

    init() async throws {
        server = try await AssetServer.start()
        directory = try TemporaryDirectory()
        (stateDirectory, store) = try SchedulerServiceTests.prepare(
            directory, server: server, clock: clock, extensionPath: nil)
    }

    /// Starts the services over the store as it is now, configured by `configure`.
    func start(_ configure: (inout BasdServices.Configuration) -> Void) throws -> ServiceHarness {
        let harness = try ServiceHarness(
            stateDirectory: stateDirectory, store: store, clock: clock, configure: configure)
        self.harness = harness
        return harness
    }

    func stop() {
        harness?.shutdown()
        directory.remove()
        let server = server
        Task { try? await server.shutdown() }
    }
}
