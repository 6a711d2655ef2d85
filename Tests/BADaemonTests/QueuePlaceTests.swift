import BAAssetServer
import BACore
import BADaemonProtocol
import BAStore
import BATestSupport
import Foundation
import Testing

@testable import BADaemon

/// Why a download waits, when it waits for the background concurrency (issue 24, "Why is it
/// waiting?"): `ba downloads` says `queue` and its place in line, whether it waits in the
/// engine (the concurrency is taken) or in the store (the engine's window is full).
@Suite("a queued download's place in line", .timeLimit(.minutes(2)))
struct QueuePlaceTests {
    static func row(_ rows: [[String: Any]], _ identifier: String) -> [String: Any]? {
        rows.first { $0["identifier"] as? String == identifier }
    }

    /// The row's place when it waits in the queue, else nil.
    static func place(_ rows: [[String: Any]], _ identifier: String) -> Int? {
        guard let row = row(rows, identifier), row["waitingFor"] as? String == "queue" else { return nil }
        return row["queuePosition"] as? Int
    }

    /// basd with one background slot, and `app` (group `group.APP`) registered and connected.
    static func oneSlot(app: String) async throws -> (DaemonProcess, DaemonClient) {
        let daemon = try await SchedulingTests.daemon(settings: ["backgroundDownloadConcurrency": 1])
        do {
            try daemon.register(app, group: "group.\(app)")
            return (daemon, try daemon.appClient(app))
        } catch {
            daemon.kill()
            throw error
        }
    }

    static func state(_ rows: [[String: Any]], _ identifier: String) -> String? {
        row(rows, identifier)?["state"] as? String
    }

    @Test("one background slot, three downloads: the 2nd and 3rd are 1st and 2nd in line, and move up")
    func placesInLine() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        for name in ["a", "b", "c"] {
            // Slow enough to run for the whole test, never silent long enough to stall.
            server.setFile("/\(name).bin", contents: SampleAppFixture.bytes(1_000_000, seed: 7))
            server.setBehavior(.trickle(bytesPerSecond: 2_000), for: "/\(name).bin")
        }
        let app = "com.example.queue"
        let (daemon, client) = try await Self.oneSlot(app: app)
        defer { daemon.kill() }
        defer { client.close() }
        for name in ["a", "b", "c"] {
            try client.call(.schedule(DownloadDescription(identifier: name, url: server.url("/\(name).bin"))))
        }
        let queued = try await CLIQueries.pollDownloads(
            "a to download while b and c wait 1st and 2nd in line", daemon, app: app, timeout: 30,
            until: {
                Self.state($0, "a") == "downloading" && Self.place($0, "b") == 1 && Self.place($0, "c") == 2
            })
        #expect(Self.row(queued, "a")?["waitingFor"] == nil, "\(queued)")
        #expect(Self.row(queued, "a")?["queuePosition"] == nil, "\(queued)")
        #expect(server.requests(for: "/b.bin").isEmpty && server.requests(for: "/c.bin").isEmpty)
        let text = try await runProcess(
            CLIQueries.ba, ["downloads", "--app", app, "--socket", daemon.socketPath])
        #expect(text.stdout.contains("waiting (queued, 1st in line)"), "\(text.stdout)")
        #expect(text.stdout.contains("waiting (queued, 2nd in line)"), "\(text.stdout)")

        // The slot frees: b starts, c moves up.
        try client.call(.cancel(identifier: "a"))
        let moved = try await CLIQueries.pollDownloads(
            "b to download and c to be 1st in line", daemon, app: app, timeout: 30,
            until: { Self.state($0, "b") == "downloading" && Self.place($0, "c") == 1 })
        #expect(Self.row(moved, "b")?["waitingFor"] == nil, "\(moved)")
    }

    @Test("a wait to retry over while the one slot is taken: queued 1st in line, its last failure still said")
    func retryEndsInTheQueue() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        server.setFile("/first.bin", contents: SampleAppFixture.bytes(50_000, seed: 5))
        // Fails once, to be tried again in 10 minutes: its wait ends only when the test says so
        // (ba retry), once slow holds the slot, however loaded the machine.
        server.setBehavior(.status(503, retryAfter: "600", times: 1), for: "/first.bin")
        server.setFile("/slow.bin", contents: SampleAppFixture.bytes(1_000_000, seed: 6))
        server.setBehavior(.trickle(bytesPerSecond: 2_000), for: "/slow.bin")
        let app = "com.example.queue"
        let (daemon, client) = try await Self.oneSlot(app: app)
        defer { daemon.kill() }
        defer { client.close() }
        // In order: first takes the slot, fails and waits to retry; then slow is scheduled and
        // takes the freed slot; then first's wait is cut short, with the slot taken.
        guard
            case .downloads(let scheduled) = try client.call(
                .schedule(DownloadDescription(identifier: "first", url: server.url("/first.bin"), priority: 9))),
            let firstID = scheduled.first?.uniqueIdentifier
        else { throw HarnessError("schedule did not answer the download") }
        _ = try await CLIQueries.pollDownloads(
            "first to wait to retry after its 503", daemon, app: app, timeout: 30,
            until: { Self.row($0, "first")?["waitingFor"] as? String == "retry" })
        try client.call(.schedule(DownloadDescription(identifier: "slow", url: server.url("/slow.bin"))))
        _ = try await CLIQueries.pollDownloads(
            "slow to download", daemon, app: app, timeout: 30, until: { Self.state($0, "slow") == "downloading" })
        let retry = try await runProcess(CLIQueries.ba, ["retry", firstID, "--socket", daemon.socketPath])
        #expect(retry.status == 0, "\(retry.stdout)\(retry.stderr)")
        let queued = try await CLIQueries.pollDownloads(
            "first to wait 1st in line after its retry wait, behind slow", daemon, app: app, timeout: 30,
            until: { Self.state($0, "slow") == "downloading" && Self.place($0, "first") == 1 })
        let first = Self.row(queued, "first")
        #expect(first?["nextAttemptAt"] == nil, "\(queued)")
        #expect((first?["errorMessage"] as? String)?.contains("503") == true, "\(queued)")
        #expect(server.requests(for: "/first.bin").count == 1)
    }

    @Test("a prefetch pack behind a busy background slot waits in the queue; it installs once the slot frees")
    func packInTheQueue() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let levels = PackFixture.random(300_000, seed: 43)
        try fixture.write(pack: "levels", policy: PackFixture.prefetch, files: ["b.bin": levels])
        try await fixture.publish(["levels"], version: 1)
        // The one background slot, held by another app's slow download.
        try Data(SampleAppFixture.bytes(1_000_000, seed: 8)).write(
            to: URL(fileURLWithPath: fixture.publish + "/slot.bin"))
        fixture.server.setBehavior(.trickle(bytesPerSecond: 2_000), for: "/slot.bin")
        let blocker = "com.example.blocker"
        let (daemon, blockerApp) = try await Self.oneSlot(app: blocker)
        defer { daemon.kill() }
        defer { blockerApp.close() }
        try blockerApp.call(.schedule(DownloadDescription(identifier: "slot", url: fixture.server.url("/slot.bin"))))
        _ = try await CLIQueries.pollDownloads(
            "the blocker to download", daemon, app: blocker, timeout: 30,
            until: { Self.state($0, "slot") == "downloading" })

        let install = try await runProcess(
            CLIQueries.ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        let waiting = try await fixture.waitForPacks(daemon, "levels to wait in the queue") {
            $0["levels"]?["waitingFor"] as? String == "queue"
        }
        #expect(waiting["levels"]?["localVersion"] == nil, "\(waiting)")
        let text = try await runProcess(
            CLIQueries.ba, ["packs", "--app", PackFixture.app, "--socket", daemon.socketPath])
        #expect(text.stdout.contains("queued"), "\(text.stdout)")

        try blockerApp.call(.cancel(identifier: "slot"))
        let installed = try await fixture.waitForPacks(daemon, "levels to install once the slot is free") {
            $0["levels"]?["localVersion"] as? Int == 1
        }
        #expect(installed["levels"]?["waitingFor"] == nil, "\(installed)")
        #expect(AssetPackTests.same(PackFixture.packPath(daemon, "levels") + "/levels/b.bin", levels))
    }

    @Test("a window of 1: the rows left in the store are in line, in queue order, priority first")
    func placesInTheStore() async throws {
        let fixture = try await ServicesFixture()
        defer { fixture.stop() }
        let (server, store) = (fixture.server, fixture.store)
        for name in ["a", "b", "c", "d"] {
            server.setFile("/\(name).bin", contents: SampleAppFixture.bytes(1_000_000, seed: 9))
            server.setBehavior(.trickle(bytesPerSecond: 2_000), for: "/\(name).bin")
        }
        let harness = try fixture.start { $0.engineWindow = 1 }
        let transfers = harness.service.transfers
        let app = try #require(try store.app(SchedulerServiceTests.app))
        // a fills the window; d (3) does not outrank it (5), so it waits in the store too, ahead of
        // b and c (0).
        try harness.service.queue.syncThrowing {
            for (name, priority) in [("a", 5), ("b", 0), ("c", 0), ("d", 3)] as [(String, Int64)] {
                try transfers.schedule(
                    DownloadDescription(identifier: name, url: server.url("/\(name).bin"), priority: priority),
                    for: app, contentRequest: 0)
            }
        }
        try await waitUntil("a to begin", timeout: 30) {
            harness.service.queue.sync { transfers.window.started.count == 1 }
        }
        let shown = try harness.service.queue.syncThrowing {
            let positions = transfers.queuePositions()
            var shown: [String: String] = [:]
            for download in try store.activeDownloads(app: SchedulerServiceTests.app) {
                let info = transfers.info(download, queuePositions: positions)
                shown[download.identifier] = "\(info.waitingFor ?? "-") \(info.queuePosition.map(String.init) ?? "-")"
            }
            return shown
        }
        #expect(shown == ["a": "- -", "d": "queue 1", "b": "queue 2", "c": "queue 3"])
        #expect(harness.service.queue.sync { transfers.window.parked })
        // A single answer (not a listing) says queue, without a place.
        let single = try harness.service.queue.syncThrowing {
            try store.activeDownloads(app: SchedulerServiceTests.app).first { $0.identifier == "c" }
                .map { transfers.info($0) }
        }
        #expect(single?.waitingFor == "queue" && single?.queuePosition == nil)
    }
}
