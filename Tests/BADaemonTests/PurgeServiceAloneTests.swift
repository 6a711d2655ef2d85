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

    @Test("a tracked finished file under disk pressure: a dry run plans it, a purge deletes it and forgets it")
    func purgesATrackedFile() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let stateDirectory = directory.path + "/state"
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
        let store = try BAStore.open(path: stateDirectory + "/state.sqlite")
        try store.register(
            StoredApp(
                bundleIdentifier: Self.app, version: "1.0", appGroupIdentifier: Self.group,
                appDirectory: directory.path, extensionPath: nil, manifestURL: nil))
        let containers = AppContainers(stateDirectory: stateDirectory)
        let container = containers.container(group: Self.group)
        let finishedDirectory = containers.finishedDirectory(group: Self.group)
        for folder in [container, finishedDirectory] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        // Finished at its delivery path; the app moves it into its container (same inode).
        let deliveryPath = finishedDirectory + "/a.bin"
        let path = container + "/a.bin"
        try Data(repeating: 7, count: 4_096).write(to: URL(fileURLWithPath: deliveryPath))
        let download = try store.schedule(
            StoredDownload(
                appIdentifier: Self.app, identifier: "a", url: "http://127.0.0.1:9/a",
                applicationGroupIdentifier: Self.group))
        let finished = try store.markFinished(uniqueIdentifier: download.uniqueIdentifier, destination: deliveryPath)
        // Delivered to the app (a file pending delivery is never purged).
        try store.markDelivered(app: Self.app, through: finished.sequence)

        var configuration = BasdServices.Configuration(stateDirectory: stateDirectory, daemonVersion: "test")
        configuration.freeSpace = { _ in 1 }
        var settings = BasdSettings()
        settings.purgeFreeSpaceThresholdBytes = 1_000_000
        let executor = ServiceExecutor()
        defer { executor.stop() }
        let log = LogInbox()
        let purge = PurgeService(
            store: store, containers: containers, configuration: configuration, executor: executor,
            settings: { [settings] in settings }, log: { log.append($0) })
        let reports = Reports()
        executor.sync { purge.track(finished: finished, path: deliveryPath, sha256: "") }
        try FileManager.default.moveItem(atPath: deliveryPath, toPath: path)

        executor.sync {
            purge.purge(dryRun: true) { report in reports.reports.append(report) }
            purge.purge(dryRun: false) { report in reports.reports.append(report) }
        }
        let deadline = Date(timeIntervalSinceNow: 30)
        while executor.sync({ reports.reports.count }) < 2 {
            guard Date() < deadline else { throw HarnessError("no purge reported: \(log.all.suffix(10))") }
            try await Task.sleep(for: .milliseconds(5))
        }
        let (dryRun, done) = executor.sync { (reports.reports[0], reports.reports[1]) }
        let planned = try dryRun.get()
        #expect(planned.dryRun && planned.bytesFreed == 4_096)
        #expect(
            planned.entries.map(\.identifier) == ["a"] && planned.entries.first?.wouldDelete == true,
            "\(planned.entries)")
        #expect(FileManager.default.fileExists(atPath: path) == false)
        #expect(try done.get().bytesFreed == 4_096)
        #expect(try store.assets().isEmpty)
        #expect(log.count { $0.hasPrefix("purged \(path)") } == 1)
    }
}
