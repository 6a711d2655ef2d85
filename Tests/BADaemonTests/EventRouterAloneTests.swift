import BACore
import BADaemonProtocol
import BAStore
import BATestSupport
import Foundation
import Testing

@testable import BADaemon
@testable import BAExtensionHost

/// The event router built alone, from what its `init` asks for: no `BasdServices`, no engine, no
/// runner. A fake extension caller answers each call at once (on the executor, as the real one
/// does after its runner ended), a fake transfer coordinator takes what the answers do to
/// transfers, and a fake delegate says whether the extension may be woken; the store is real.
@Suite("the event router on its own", .timeLimit(.minutes(1)))
struct EventRouterAloneTests {
    static let app = "com.example.router"

    /// Calls made, answered `ok` unless the download's identifier starts with `crash`
    /// (executor-confined).
    final class FakeExtensions: ExtensionCalling, @unchecked Sendable {
        let executor: ServiceExecutor
        var isAvailable = true
        /// The identifiers of each call's events, in order.
        var calls: [[String]] = []
        /// The file paths the `finished` events were handed with.
        var filePaths: [String] = []
        init(executor: ServiceExecutor) { self.executor = executor }

        func call(
            _ app: StoredApp, libraryPath: String, event: RunnerEvent, moreEvents: [RunnerEvent],
            kind: StoredExtensionRun.Event, bypassAllowance: Bool, cleanup: (@Sendable () -> Void)?,
            callsEnded: (([BAExtensionRunResult]) -> Void)?,
            countsTowardQuarantine: ((ExtensionCallOutcome) -> Bool)?, done: @escaping (ExtensionCallOutcome) -> Void
        ) {
            let events = [event] + moreEvents
            var results: [BAExtensionRunResult] = []
            var identifiers: [String] = []
            for (index, event) in events.enumerated() {
                guard case .finished(let record, let filePath) = event else { continue }
                identifiers.append(record.identifier)
                filePaths.append(filePath)
                var result = BAExtensionRunResult(
                    verdict: record.identifier.hasPrefix("crash") ? .crashed(signal: 11) : .ok)
                result.callIndex = index
                results.append(result)
                if result.verdict != .ok { break }
            }
            calls.append(identifiers)
            cleanup?()
            // Answered in a later turn of the executor, as the real caller's runner ends.
            pending.append((results, callsEnded, countsTowardQuarantine, done))
            executor.async { [self] in answerNext() }
        }

        /// Calls not answered yet, in order.
        private var pending:
            [(
                results: [BAExtensionRunResult], callsEnded: (([BAExtensionRunResult]) -> Void)?,
                countsTowardQuarantine: ((ExtensionCallOutcome) -> Bool)?, done: (ExtensionCallOutcome) -> Void
            )] = []

        private func answerNext() {
            let call = pending.removeFirst()
            // The results of the calls before the last, as they came in; then the runner's end.
            call.callsEnded?(Array(call.results.dropLast()))
            let outcome = ExtensionCallOutcome.ran(call.results[call.results.count - 1])
            _ = call.countsTowardQuarantine?(outcome)
            call.done(outcome)
        }
    }

    /// What an extension's answers did to transfers (none here: the calls neither schedule nor cancel).
    final class FakeTransfers: EventTransfers, @unchecked Sendable {
        var cancellationsApplied = 0
        func respond(to uniqueIdentifier: String, disposition: Int, user: String?, password: String?) {}
        func schedule(
            _ payload: DownloadDescription, for app: StoredApp, contentRequest: Int32?, start: Bool
        ) throws
            -> StoredDownload
        {
            throw HarnessError("not expected: the calls schedule nothing")
        }
        func start(_ stored: StoredDownload) {}
        func applyCancellations(_ identifiers: [String], of app: String) -> [String] {
            cancellationsApplied += 1
            return identifiers
        }
    }

    /// Whether the extension may be woken: the refusal the test sets (executor-confined).
    final class Gate: EventRouterDelegate, @unchecked Sendable {
        var refusal: String?
        var asked = 0
        func delivery(_ delivery: EventRouter, refusalToWake app: StoredApp) -> String? {
            asked += 1
            return refusal
        }
    }

    /// A router over a fresh store with the app registered, and its fakes.
    final class Rig: Sendable {
        let directory: TemporaryDirectory
        let store: BAStore
        let executor = ServiceExecutor()
        let extensions: FakeExtensions
        let transfers = FakeTransfers()
        let gate = Gate()
        let router: EventRouter
        let log = LogInbox()

        init() throws {
            directory = try TemporaryDirectory()
            store = try BAStore.open(path: directory.path + "/state.sqlite")
            try store.register(
                StoredApp(
                    bundleIdentifier: EventRouterAloneTests.app, version: "1.0", appGroupIdentifier: nil,
                    appDirectory: directory.path, extensionPath: directory.path + "/libNeverLoaded.so",
                    manifestURL: nil))
            extensions = FakeExtensions(executor: executor)
            let log = log
            router = EventRouter(
                store: store,
                configuration: BasdServices.Configuration(stateDirectory: directory.path, daemonVersion: "test"),
                executor: executor, extensions: extensions, transfers: transfers, log: { log.append($0) })
            router.delegate = gate
        }

        /// A download of the app that finished into `name` (a file the extension "moved": not there).
        func finish(_ identifier: String) throws -> StoredEvent {
            let download = try store.schedule(
                StoredDownload(
                    appIdentifier: EventRouterAloneTests.app, identifier: identifier,
                    url: "http://127.0.0.1:9/\(identifier)"))
            return try store.markFinished(
                uniqueIdentifier: download.uniqueIdentifier, destination: directory.path + "/\(identifier).bin", size: 5
            )
        }

        /// Waits until the app has no undelivered event left for its extension.
        func waitUntilDelivered() async throws {
            let deadline = Date(timeIntervalSinceNow: 20)
            while try !store.undeliveredEvents(app: EventRouterAloneTests.app, includingParked: false).isEmpty
                || executor.sync({ router.isExtensionBusy(EventRouterAloneTests.app) })
            {
                guard Date() < deadline else { throw HarnessError("events not delivered: \(log.all.suffix(10))") }
                try await Task.sleep(for: .milliseconds(5))
            }
        }

        func stop() {
            executor.stop()
            directory.remove()
        }
    }

    @Test("two finished events go to the extension in one runner and are acknowledged: delivered, nothing left")
    func finishedEventsAcknowledged() async throws {
        let rig = try Rig()
        defer { rig.stop() }
        let a = try rig.finish("a")
        let b = try rig.finish("b")
        rig.executor.sync {
            rig.router.recorded(a)
            // Recorded while the extension has `a` (and `b` with it): nothing more is woken.
            rig.router.recorded(b)
        }
        try await rig.waitUntilDelivered()
        let (calls, paths, asked, cancellations) = rig.executor.sync {
            (rig.extensions.calls, rig.extensions.filePaths, rig.gate.asked, rig.transfers.cancellationsApplied)
        }
        #expect(calls == [["a", "b"]])
        #expect(paths == [rig.directory.path + "/a.bin", rig.directory.path + "/b.bin"])
        #expect(asked == 1)
        // Each `ok` call's cancellations (none) were applied to the transfers.
        #expect(cancellations == 2)
        #expect(try rig.store.undeliveredEvents(app: Self.app).isEmpty)
        #expect(rig.executor.sync { rig.router.machines[Self.app] } == nil)
    }

    @Test("an extension the delegate refuses is not woken; the scheduler's tick after the refusal ends wakes it")
    func refusedThenTicked() async throws {
        let rig = try Rig()
        defer { rig.stop() }
        let a = try rig.finish("a")
        rig.executor.sync {
            rig.gate.refusal = "Low Power Mode is on"
            rig.router.recorded(a)
        }
        #expect(rig.executor.sync { rig.extensions.calls.isEmpty && rig.router.hasHeldBackEvents })
        #expect(rig.log.count { $0.contains("not waking its extension: Low Power Mode is on") } == 1)
        rig.executor.sync {
            rig.gate.refusal = nil
            rig.router.schedulerTick()
        }
        try await rig.waitUntilDelivered()
        #expect(rig.executor.sync { rig.extensions.calls } == [["a"]])
        #expect(rig.executor.sync { rig.router.hasHeldBackEvents } == false)
    }

    @Test("an event whose call crashes every time is parked after its attempts; the event after it is delivered")
    func poisonedEventParked() async throws {
        let rig = try Rig()
        defer { rig.stop() }
        let bad = try rig.finish("crash-a")
        let good = try rig.finish("b")
        rig.executor.sync {
            rig.router.recorded(bad)
            rig.router.recorded(good)
        }
        try await rig.waitUntilDelivered()
        let calls = rig.executor.sync { rig.extensions.calls }
        // Three attempts (the configuration's default), then `b` alone.
        #expect(calls == [["crash-a"], ["crash-a"], ["crash-a"], ["b"]])
        let undelivered = try rig.store.undeliveredEvents(app: Self.app)
        #expect(undelivered.map(\.sequence) == [bad.sequence])
        #expect(undelivered.first?.parkedReason?.contains("failed 3 times") == true)
    }

    @Test("a walk past 600 began events (pages of 256, each acknowledged in one write) reaches the finished event")
    func longWalk() async throws {
        let rig = try Rig()
        defer { rig.stop() }
        // 600 transfers that began, then one download that finished: only that one has an entry point.
        for index in 0..<600 {
            let download = try rig.store.schedule(
                StoredDownload(
                    appIdentifier: Self.app, identifier: "began-\(index)", url: "http://127.0.0.1:9/\(index)"))
            _ = try rig.store.recordBegan(uniqueIdentifier: download.uniqueIdentifier, offset: 0, isForeground: false)
        }
        let done = try rig.finish("last")
        rig.executor.sync { rig.router.recorded(done) }
        try await rig.waitUntilDelivered()
        #expect(rig.executor.sync { rig.extensions.calls } == [["last"]])
        #expect(try rig.store.undeliveredEvents(app: Self.app).isEmpty)
    }
}
