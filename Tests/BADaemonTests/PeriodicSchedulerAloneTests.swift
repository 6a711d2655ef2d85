import BADaemonProtocol
import BAScheduling
import BASettings
import BAStore
import BATestSupport
import Foundation
import Testing

@testable import BADaemon

/// The scheduler built alone, from what its `init` asks for: no `BasdServices`. The services
/// below it are fakes (the installer, the transfers, the extension caller) or built alone
/// themselves (the event router, over fakes; the purge service); the store is real and the
/// clock and the power profile are the test's.
@Suite("the periodic scheduler on its own", .timeLimit(.minutes(1)))
struct PeriodicSchedulerAloneTests {
    static let app = "com.example.periodic"

    /// The content-request calls asked for, answered at once (executor-confined).
    final class FakeInstaller: SchedulerInstalling, @unchecked Sendable {
        let executor: ServiceExecutor
        var calls: [ContentRequestKind] = []
        init(executor: ServiceExecutor) { self.executor = executor }

        func uninstall(
            _ bundleIdentifier: String, keepData: Bool, why: String,
            reply: @escaping @Sendable (ServerMessage.Result) -> Void
        ) {}

        func callContentRequest(
            _ kind: ContentRequestKind, of app: StoredApp, bypassAllowance: Bool, report: ExtensionRunReport,
            done: @escaping @Sendable (ExtensionRunReport) -> Void
        ) {
            calls.append(kind)
            executor.async { done(report) }
        }

        func manifestRetrySummary(of app: String) -> String? { nil }
    }

    /// Whether background transfers were held, each time it changed (executor-confined).
    final class FakeTransfers: SchedulerTransfers, @unchecked Sendable {
        var held: [Bool] = []
        func holdBackground(_ held: Bool) { self.held.append(held) }
        func remainingAllowances(of app: StoredApp) -> (nonEssential: Int64?, essential: Int64?) { (nil, nil) }
    }

    @Test("a due periodic run goes to the installer; in Low Power Mode it is refused and transfers are held")
    func periodicRunsAndLowPowerMode() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_780_000_000))
        let store = try BAStore.open(path: directory.path + "/state.sqlite", clock: { clock.now })
        let library = try directory.write("libExtension.so", "not loaded: the installer is a fake")
        try store.register(
            StoredApp(
                bundleIdentifier: Self.app, version: "1.0", appGroupIdentifier: nil, appDirectory: directory.path,
                extensionPath: library, manifestURL: "http://127.0.0.1:9/manifest.json"))
        let profile = try directory.write("platform_profile", "balanced\n")
        var configuration = BasdServices.Configuration(stateDirectory: directory.path, daemonVersion: "test")
        configuration.clock.wall = { clock.now }
        configuration.lowPowerMode = LowPowerMode(sources: [profile])
        var settings = BasdSettings()
        settings.automaticPurge = false
        let executor = ServiceExecutor()
        defer { executor.stop() }
        let log = LogInbox()
        let record: @Sendable (String) -> Void = { log.append($0) }
        let extensions = EventRouterAloneTests.FakeExtensions(executor: executor)
        let delivery = EventRouter(
            store: store, configuration: configuration, executor: executor, extensions: extensions,
            transfers: EventRouterAloneTests.FakeTransfers(), log: record)
        let purge = PurgeService(
            store: store, containers: AppContainers(stateDirectory: directory.path), configuration: configuration,
            executor: executor, settings: { [settings] in settings }, log: record)
        let installer = FakeInstaller(executor: executor)
        let transfers = FakeTransfers()
        var refreshes = 0
        let scheduler = PeriodicScheduler(
            store: store, configuration: configuration, executor: executor, settings: { [settings] in settings },
            refreshSettings: { refreshes += 1 }, extensions: extensions, delivery: delivery, purge: purge,
            transfers: transfers, installer: installer,
            packs: NoPackTransfers.service(
                store: store, directory: directory.path, configuration: configuration, executor: executor),
            log: record)

        // Days pass until the first periodic run is due (its interval is jittered).
        var days = 0
        while executor.sync({ installer.calls.isEmpty }) {
            days += 1
            try #require(days <= 30, "no periodic run in 30 days: \(log.all.suffix(10))")
            clock.advance(by: 86_400)
            executor.sync { scheduler.tick() }
        }
        #expect(executor.sync { installer.calls } == [.periodic])
        // The installer's answer reached the scheduler: the next run is about an interval away.
        let deadline = Date(timeIntervalSinceNow: 20)
        while (try scheduler.schedulingState(#require(try store.app(Self.app))).periodic.nextRun ?? .distantPast)
            <= clock.now
        {
            guard Date() < deadline else { throw HarnessError("the next run was not scheduled: \(log.all.suffix(10))") }
            try await Task.sleep(for: .milliseconds(5))
        }

        try Data("low-power\n".utf8).write(to: URL(fileURLWithPath: profile))
        clock.advance(by: 30 * 86_400)
        executor.sync { scheduler.tick() }
        #expect(executor.sync { installer.calls } == [.periodic])
        #expect(executor.sync { transfers.held } == [true])
        #expect(log.count { $0.contains("periodic run refused: Low Power Mode is on") } == 1)
        #expect(executor.sync { refreshes } == days + 1)
    }
}
