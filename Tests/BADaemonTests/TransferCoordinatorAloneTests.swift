import BAAssetServer
import BACore
import BADaemonProtocol
import BAScheduling
import BASettings
import BAStore
import BATestSupport
import Foundation
import Testing

@testable import BADaemon

/// The transfer coordinator built alone, from what its `init` asks for: no `BasdServices`, no
/// event router, purge service or installer. A fake delegate takes what it reports; the store,
/// the engine and the loopback server are real.
@Suite("the transfer coordinator on its own", .timeLimit(.minutes(1)))
struct TransferCoordinatorAloneTests {
    /// What the coordinator reported (executor-confined: read through `executor.sync`).
    final class Reports: TransferCoordinatorDelegate, @unchecked Sendable {
        var recorded: [StoredEvent] = []
        var finishedPaths: [String] = []
        var cancelled: [WireEvent] = []
        var networkChanges = 0

        func transfers(_ transfers: TransferCoordinator, recorded event: StoredEvent) { recorded.append(event) }
        func transfers(_ transfers: TransferCoordinator, finished event: StoredEvent, path: String, sha256: String) {
            finishedPaths.append(path)
        }
        func transfersHaveProgressListeners(_ transfers: TransferCoordinator) -> Bool { false }
        func transfers(
            _ transfers: TransferCoordinator, progressOf download: StoredDownload, bytesWritten: Int64,
            totalBytes: Int64?
        ) {}
        func transfers(_ transfers: TransferCoordinator, cancelled event: WireEvent) { cancelled.append(event) }
        func transfers(_ transfers: TransferCoordinator, waiting event: WireEvent) {}
        func transfersNetworkChanged(_ transfers: TransferCoordinator) { networkChanges += 1 }
        func transfers(_ transfers: TransferCoordinator, backgroundHoldChanged reason: NetworkConditions.Hold?) {}
        var servers: [(String, TransferCoordinator.ServerWait?)] = []
        func transfers(_ transfers: TransferCoordinator, server: String, waiting: TransferCoordinator.ServerWait?) {
            servers.append((server, waiting))
        }
    }

    /// A state folder in `directory` whose store has one app registered (no extension), and
    /// settings that allow loopback hosts only.
    static func stateWithOneApp(in directory: TemporaryDirectory) throws -> (String, BAStore, BasdSettings) {
        let stateDirectory = directory.path + "/state"
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
        let store = try BAStore.open(path: stateDirectory + "/state.sqlite")
        try store.register(
            StoredApp(
                bundleIdentifier: SchedulerServiceTests.app, version: "1.0",
                appGroupIdentifier: SchedulerServiceTests.group, appDirectory: directory.path, extensionPath: nil,
                manifestURL: nil))
        var settings = BasdSettings()
        settings.allowedHosts = TestSettings.loopbackHosts
        return (stateDirectory, store, settings)
    }

    @Test("a download finishes, another is cancelled, the network changes: each is reported to the delegate")
    func reportsUpward() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let bytes = SampleAppFixture.bytes(20_000, seed: 7)
        server.setFile("/a.bin", contents: bytes)
        let (stateDirectory, store, settings) = try Self.stateWithOneApp(in: directory)
        let executor = ServiceExecutor()
        let log = LogInbox()
        let coordinator = TransferCoordinator(
            store: store, containers: AppContainers(stateDirectory: stateDirectory),
            configuration: BasdServices.Configuration(stateDirectory: stateDirectory, daemonVersion: "test"),
            executor: executor, settings: { [settings] in settings }, log: { log.append($0) })
        let reports = Reports()
        coordinator.delegate = reports
        coordinator.followEngine()
        defer {
            coordinator.shutdown()
            executor.stop()
        }
        let app = try #require(try store.app(SchedulerServiceTests.app))

        try executor.syncThrowing {
            try coordinator.schedule(
                DownloadDescription(identifier: "a", url: server.url("/a.bin")), for: app, contentRequest: 0)
            // Scheduled and cancelled in one turn: its row is gone, the observers are told.
            try coordinator.schedule(
                DownloadDescription(identifier: "b", url: server.url("/never.bin")), for: app, contentRequest: 0)
            try coordinator.cancel(app: SchedulerServiceTests.app, identifier: "b", by: "the test")
            coordinator.networkChanged()
        }
        let deadline = Date(timeIntervalSinceNow: 30)
        // Until a's finished event is reported and b's cancelled transfer has left the engine.
        while !executor.sync({
            reports.recorded.contains { $0.kind == .finished } && coordinator.window.inEngineCount == 0
        }) {
            guard Date() < deadline else { throw HarnessError("no finished event reported: \(log.all.suffix(10))") }
            try await Task.sleep(for: .milliseconds(5))
        }
        let (kinds, paths, cancelled, networkChanges) = executor.sync {
            (reports.recorded.map(\.kind), reports.finishedPaths, reports.cancelled, reports.networkChanges)
        }
        #expect(kinds.first == .began && kinds.last == .finished, "\(kinds)")
        let path = try #require(paths.first)
        #expect(paths.count == 1)
        #expect(FileManager.default.contents(atPath: path) == Data(bytes))
        #expect(cancelled.map(\.identifier) == ["b"])
        #expect(cancelled.first?.errorCode == -999)
        #expect(networkChanges == 1)
    }

    @Test("a pack file waiting for a server that gave no answer goes at once when the network changes")
    func networkChangeReleasesPackFiles() async throws {
        let port = try RetryCommandTests.closedPort()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (stateDirectory, store, settings) = try Self.stateWithOneApp(in: directory)
        var configuration = BasdServices.Configuration(stateDirectory: stateDirectory, daemonVersion: "test")
        // The gate's own next try far off: only the network change explains a quick end.
        configuration.engine.serverProbeUrgent = .init(initial: .seconds(120), maximum: .seconds(120))
        let executor = ServiceExecutor()
        let log = LogInbox()
        let coordinator = TransferCoordinator(
            store: store, containers: AppContainers(stateDirectory: stateDirectory), configuration: configuration,
            executor: executor, settings: { [settings] in settings }, log: { log.append($0) })
        let reports = Reports()
        coordinator.delegate = reports
        coordinator.followEngine()
        defer {
            coordinator.shutdown()
            executor.stop()
        }
        let app = try #require(try store.app(SchedulerServiceTests.app))
        let result = LockedBox<Result<String, TransferCoordinator.PackFetchFailure>?>(nil)
        executor.sync {
            coordinator.fetchPackFile(
                .init(
                    id: "x", url: "http://127.0.0.1:\(port)/x.bin", destination: directory.path + "/x.bin",
                    essential: true), for: app
            ) { result.set($0) }
        }
        try await waitUntil("the server to be waited for", timeout: 30) {
            executor.sync { coordinator.serverWait(of: "http://127.0.0.1:\(port)/x.bin") != nil }
        }
        let wait = try #require(executor.sync { coordinator.serverWait(of: "http://127.0.0.1:\(port)/") })
        #expect(wait.reason.contains("127.0.0.1:\(port)"), "\(wait)")
        #expect(wait.nextAttemptAt.timeIntervalSinceNow > 30, "\(wait)")

        let server = try await AssetServer.start(port: port)
        defer { Task { try? await server.shutdown() } }
        server.setFile("/x.bin", contents: SampleAppFixture.bytes(5000, seed: 3))
        executor.sync { coordinator.networkChanged() }
        try await waitUntil("the file, after the network change", timeout: 30) { result.get() != nil }
        guard case .success(let path)? = result.get() else {
            Issue.record("\(String(describing: result.get())): \(log.all.suffix(10))")
            return
        }
        #expect(FileManager.default.contents(atPath: path) == Data(SampleAppFixture.bytes(5000, seed: 3)))
        try await waitUntil("the server's answer to be reported", timeout: 30) {
            executor.sync { reports.servers.last.map { $0.1 == nil } ?? false }
        }
        let lines = log.all
        #expect(lines.contains { $0.contains("server http://127.0.0.1:\(port) gives no answer") }, "\(lines)")
        #expect(
            lines.contains { $0.contains("the network changed: the servers that gave no answer are tried again now") })
        #expect(lines.contains { $0.contains("server http://127.0.0.1:\(port) answers again after") }, "\(lines)")
    }
}

/// A value shared with a callback on another thread.
final class LockedBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func get() -> Value { lock.withLock { value } }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
}
