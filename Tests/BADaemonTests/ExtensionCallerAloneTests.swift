import BACore
import BAExtensionHost
import BAScheduling
import BASettings
import BAStore
import BATestSupport
import Foundation
import Testing

@testable import BADaemon

/// The extension caller built alone, from what its `init` asks for: no `BasdServices`, no
/// scheduler, event router or transfer coordinator. A fake delegate sets each call's deadline and
/// takes each run's end; the store, the runner and the extension (`BATestEvents`) are real.
@Suite("the extension caller on its own", .timeLimit(.minutes(1)))
struct ExtensionCallerAloneTests {
    static let app = "com.example.caller"

    /// What the caller asked and reported (executor-confined: read through `executor.sync`).
    final class Reports: ExtensionCallerDelegate, @unchecked Sendable {
        var budgetsAsked: [String] = []
        var ran: [(app: String, verdict: String, countsTowardQuarantine: Bool)] = []
        var activeAsked: [Int] = []
        var early: [Int] = []
        var outcome: ExtensionCallOutcome?

        func extensions(
            _ extensions: ExtensionCaller, budgetFor app: StoredApp, bypassAllowance: Bool
        ) -> (perCall: Duration, total: Duration?) {
            budgetsAsked.append(app.bundleIdentifier)
            return (.seconds(20), .seconds(40))
        }

        func extensions(
            _ extensions: ExtensionCaller, ran app: StoredApp, outcome: ExtensionCallOutcome,
            runtimeMilliseconds: Int64, countsTowardQuarantine: Bool
        ) {
            ran.append((app.bundleIdentifier, outcome.verdictName, countsTowardQuarantine))
        }
    }

    static func finished(_ identifier: String) -> RunnerEvent {
        .finished(
            DownloadDescription(identifier: identifier, url: "http://127.0.0.1:9/\(identifier)"), filePath: "/dev/null")
    }

    @Test(
        "two events in one runner, the second crashing: the first's result comes early, the run is recorded once and reported to the delegate"
    )
    func reportsUpward() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let stateDirectory = directory.path + "/state"
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
        let store = try BAStore.open(path: stateDirectory + "/state.sqlite")
        try store.register(
            StoredApp(
                bundleIdentifier: Self.app, version: "1.0", appGroupIdentifier: nil, appDirectory: directory.path,
                extensionPath: BuildProducts.library("BATestEvents"), manifestURL: nil))
        let app = try #require(try store.app(Self.app))
        var configuration = BasdServices.Configuration(stateDirectory: stateDirectory, daemonVersion: "test")
        configuration.runnerPath = BuildProducts.executable("ba-extension-runner")
        configuration.currentDownloadsLimit = 1
        let executor = ServiceExecutor()
        defer { executor.stop() }
        let log = LogInbox()
        let reports = Reports()
        let caller = ExtensionCaller(
            store: store, containers: AppContainers(stateDirectory: stateDirectory), configuration: configuration,
            executor: executor, settings: { BasdSettings() },
            activeDownloads: { app, limit in
                reports.activeAsked.append(limit)
                return ["x", "y"].map { DownloadDescription(identifier: $0, url: "http://127.0.0.1:9/\($0)") }
            }, log: { log.append($0) })
        caller.delegate = reports

        executor.sync {
            #expect(caller.isAvailable)
            caller.call(
                app, libraryPath: BuildProducts.library("BATestEvents"), event: Self.finished("a"),
                moreEvents: [Self.finished("crash-b")], kind: .finished, bypassAllowance: false,
                callsEnded: { results in reports.early += results.map(\.callIndex) },
                countsTowardQuarantine: { _ in false }
            ) { ended in
                // After the early results, on the executor, once the run is recorded and reported.
                #expect(reports.early == [0])
                #expect(reports.ran.count == 1)
                reports.outcome = ended
            }
        }
        let deadline = Date(timeIntervalSinceNow: 30)
        while executor.sync({ reports.outcome == nil }) {
            guard Date() < deadline else { throw HarnessError("the call did not end: \(log.all.suffix(10))") }
            try await Task.sleep(for: .milliseconds(5))
        }
        let ended = try #require(executor.sync { reports.outcome })
        #expect(ended.verdictName == "crashed")
        #expect(ended.callIndex == 1)
        let (budgets, ran, activeAsked) = executor.sync { (reports.budgetsAsked, reports.ran, reports.activeAsked) }
        #expect(budgets == [Self.app])
        #expect(ran.count == 1)
        #expect(ran.first?.app == Self.app && ran.first?.verdict == "crashed")
        #expect(ran.first?.countsTowardQuarantine == false)
        // The extension saw at most `currentDownloadsLimit` of the app's active downloads.
        #expect(activeAsked == [2])
        #expect(log.count { $0.contains("has more than 1 active downloads") } == 1)
        #expect(log.count { $0 == "[\(Self.app) extension] BATestEvents: download_finished a call 1" } == 1)
        let runs = try store.extensionRuns(app: Self.app)
        #expect(runs.count == 1)
        #expect(runs.first?.verdict == "crashed")
        #expect(runs.first?.detail?.contains("event 2 of 2 in one runner") == true)
    }
}
