import BADaemonProtocol
import BAScheduling
import BASettings
import BAStore
import BATestSupport
import Foundation
import Testing

@testable import BADaemon

/// The purge service built alone, from what its `init` asks for: no `BasdServices`, no
/// scheduler or transfer coordinator. The store, the file system and the purger are real; the
/// free space is injected.
@Suite("the purge service on its own", .timeLimit(.minutes(1)))
struct PurgeServiceAloneTests {
    static let app = "com.example.purged"
    static let group = "group.com.example.purged"

    /// A report handed back on the executor (read through `executor.sync`).
    final class Reports: @unchecked Sendable {
        var reports: [Result<PurgeReport, Refusal>] = []
    }

    /// A registered app with a container, a purge service over it with `configuration`'s clock and
    /// free space, and one 4 KiB finished file `a` the app moved into its container (tracked at
    /// delivery, so held or not by what the store says of the app then).
    struct Setup {
        let directory: TemporaryDirectory
        let store: BAStore
        let executor: ServiceExecutor
        let purge: PurgeService
        let log: LogInbox
        /// Where the app moved the file.
        let path: String

        init(launchedBeforeDelivery: Bool, configure: (inout BasdServices.Configuration) -> Void = { _ in }) throws {
            directory = try TemporaryDirectory()
            let stateDirectory = directory.path + "/state"
            try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
            store = try BAStore.open(path: stateDirectory + "/state.sqlite")
            try store.register(
                StoredApp(
                    bundleIdentifier: PurgeServiceAloneTests.app, version: "1.0",
                    appGroupIdentifier: PurgeServiceAloneTests.group, appDirectory: directory.path,
                    extensionPath: nil, manifestURL: nil))
            if launchedBeforeDelivery { try store.markLaunched(app: PurgeServiceAloneTests.app) }
            let containers = AppContainers(stateDirectory: stateDirectory)
            let container = containers.container(group: PurgeServiceAloneTests.group)
            let finishedDirectory = containers.finishedDirectory(group: PurgeServiceAloneTests.group)
            for folder in [container, finishedDirectory] {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            }
            // Finished at its delivery path; the app moves it into its container (same inode).
            let deliveryPath = finishedDirectory + "/a.bin"
            path = container + "/a.bin"
            try Data(repeating: 7, count: 4_096).write(to: URL(fileURLWithPath: deliveryPath))
            let download = try store.schedule(
                StoredDownload(
                    appIdentifier: PurgeServiceAloneTests.app, identifier: "a", url: "http://127.0.0.1:9/a",
                    applicationGroupIdentifier: PurgeServiceAloneTests.group))
            let finished = try store.markFinished(
                uniqueIdentifier: download.uniqueIdentifier, destination: deliveryPath)
            // Delivered to the app (a file pending delivery is never purged).
            try store.markDelivered(app: PurgeServiceAloneTests.app, through: finished.sequence)

            var configuration = BasdServices.Configuration(stateDirectory: stateDirectory, daemonVersion: "test")
            configuration.freeSpace = { _ in 1 }
            configure(&configuration)
            var settings = BasdSettings()
            settings.purgeFreeSpaceThresholdBytes = 1_000_000
            executor = ServiceExecutor()
            let log = LogInbox()
            self.log = log
            purge = PurgeService(
                store: store, containers: containers, configuration: configuration, executor: executor,
                settings: { [settings] in settings }, log: { log.append($0) })
            let purge = self.purge
            executor.sync { purge.track(finished: finished, path: deliveryPath, sha256: "") }
            try FileManager.default.moveItem(atPath: deliveryPath, toPath: path)
        }

        func remove() {
            executor.stop()
            directory.remove()
        }

        /// Runs `start` on the executor with a report sink, and waits (bounded) for `count` reports.
        func reports(
            _ count: Int,
            _ start: @escaping (PurgeService, @escaping @Sendable (Result<PurgeReport, Refusal>) -> Void) -> Void
        ) async throws -> [Result<PurgeReport, Refusal>] {
            let reports = Reports()
            let purge = self.purge
            executor.sync { start(purge) { report in reports.reports.append(report) } }
            let deadline = Date(timeIntervalSinceNow: 30)
            while executor.sync({ reports.reports.count }) < count {
                guard Date() < deadline else { throw HarnessError("no purge reported: \(log.all.suffix(10))") }
                try await Task.sleep(for: .milliseconds(5))
            }
            return executor.sync { reports.reports }
        }
    }

    @Test("a tracked finished file under disk pressure: a dry run plans it, a purge deletes it and forgets it")
    func purgesATrackedFile() async throws {
        let setup = try Setup(launchedBeforeDelivery: true)
        defer { setup.remove() }
        let reports = try await setup.reports(2) { purge, report in
            purge.purge(dryRun: true, then: report)
            purge.purge(dryRun: false, then: report)
        }
        let planned = try reports[0].get()
        #expect(planned.dryRun && planned.bytesFreed == 4_096)
        #expect(
            planned.entries.map(\.identifier) == ["a"] && planned.entries.first?.wouldDelete == true,
            "\(planned.entries)")
        #expect(FileManager.default.fileExists(atPath: setup.path) == false)
        #expect(try reports[1].get().bytesFreed == 4_096)
        #expect(try setup.store.assets().isEmpty)
        #expect(setup.log.count { $0.hasPrefix("purged \(setup.path)") } == 1)
    }

    @Test(
        "the automatic purge under disk pressure keeps a file delivered before the app's first launch; after the launch it goes"
    )
    func keepsAPreLaunchFileUntilTheLaunch() async throws {
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        let setup = try Setup(launchedBeforeDelivery: false) { $0.clock.wall = { clock.now } }
        defer { setup.remove() }
        #expect(try setup.store.assets().map(\.heldUntilLaunch) == ["firstLaunch"])

        // The scheduler's free-space check: 1 byte free, 1 MB wanted. A dry run queued behind it
        // (one purge at a time) reports once it is done.
        var reports = try await setup.reports(1) { purge, report in
            purge.checkFreeSpace()
            #expect(purge.running, "the automatic purge started")
            purge.purge(dryRun: true, then: report)
        }
        let kept = try reports[0].get()
        #expect(
            kept.entries.map(\.status) == ["awaitingLaunch"] && kept.entries.first?.wouldDelete == false,
            "\(kept.entries)")
        #expect(kept.entries.first?.reason == "kept: the app has not launched yet")
        #expect(FileManager.default.fileExists(atPath: setup.path))
        #expect(setup.log.count { $0.hasPrefix("purged") } == 0, "\(setup.log.all)")

        // The app's first launch; the next check, a minute later, purges it.
        #expect(try setup.store.markLaunched(app: Self.app))
        clock.advance(by: 60)
        reports = try await setup.reports(1) { purge, report in
            purge.checkFreeSpace()
            purge.purge(dryRun: true, then: report)
        }
        #expect(try reports[0].get().entries.isEmpty, "purged and forgotten")
        #expect(!FileManager.default.fileExists(atPath: setup.path))
        #expect(setup.log.count { $0.hasPrefix("purged \(setup.path)") } == 1, "\(setup.log.all)")
    }
}
