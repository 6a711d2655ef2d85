import BACore
import BADaemonProtocol
import BAStore
import BATestSupport
import Foundation
import Testing

@testable import BADaemon
@testable import BAExtensionHost

/// The installer built alone, from what its `init` asks for: no `BasdServices`, no engine, no
/// runner. A fake event router grants the app's extension slot at once, a fake extension caller
/// answers a content request with the downloads the test gives it, and fake transfers fetch the
/// manifest (a file the test writes), schedule into the real store and record what an uninstall
/// drops; a fake delegate answers the call gate. The store and the app containers are real.
@Suite("the app installer on its own", .timeLimit(.minutes(1)))
struct AppInstallerAloneTests {
    static let app = "com.example.installer"
    static let group = "group.com.example.installer"

    /// The extension slot, granted at once (executor-confined).
    final class FakeDelivery: InstallerDelivery, @unchecked Sendable {
        var requested: [String] = []
        var ended: [AppDeliveryStateMachine.CallID] = []
        var forgotten: [String] = []
        private var nextID: AppDeliveryStateMachine.CallID = 0

        func requestExtension(
            for app: String, what: String, start: @escaping (AppDeliveryStateMachine.CallID) -> Void
        ) {
            requested.append(what)
            nextID += 1
            start(nextID)
        }
        func contentCallEnded(_ id: AppDeliveryStateMachine.CallID, app: String) { ended.append(id) }
        func forget(_ app: String) { forgotten.append(app) }
    }

    /// Content requests answered `ok` with ``downloads``, in a later turn of the executor
    /// (executor-confined).
    final class FakeExtensions: ExtensionCalling, @unchecked Sendable {
        let executor: ServiceExecutor
        var isAvailable = true
        var downloads: [DownloadDescription] = []
        /// The content requests' kinds (`BAContentRequest` raw values), in order.
        var requests: [Int32] = []
        init(executor: ServiceExecutor) { self.executor = executor }

        func call(
            _ app: StoredApp, libraryPath: String, event: RunnerEvent, moreEvents: [RunnerEvent],
            kind: StoredExtensionRun.Event, bypassAllowance: Bool, cleanup: (@Sendable () -> Void)?,
            callsEnded: (([BAExtensionRunResult]) -> Void)?,
            countsTowardQuarantine: ((ExtensionCallOutcome) -> Bool)?, done: @escaping (ExtensionCallOutcome) -> Void
        ) {
            if case .contentRequest(let request, _, _, _, _) = event { requests.append(request) }
            let records = downloads
            let answer = UncheckedSendable(done)
            executor.async {
                cleanup?()
                var result = BAExtensionRunResult(verdict: .ok)
                result.downloads = records
                answer.value(.ran(result))
            }
        }
    }

    /// Manifests from a file, downloads scheduled into the real store, and what was started,
    /// dropped and forgotten (executor-confined).
    final class FakeTransfers: InstallerTransfers, @unchecked Sendable {
        let store: BAStore
        let executor: ServiceExecutor
        let manifestPath: String
        var scheduled: [String] = []
        var started: [String] = []
        /// The downloads each drop was given (one drop per slice of an uninstall, and one at its end).
        var drops: [[String]] = []
        var forgottenGroups: [String] = []
        init(store: BAStore, executor: ServiceExecutor, manifestPath: String) {
            self.store = store
            self.executor = executor
            self.manifestPath = manifestPath
        }

        func respond(to uniqueIdentifier: String, disposition: Int, user: String?, password: String?) {}
        func schedule(
            _ payload: DownloadDescription, for app: StoredApp, contentRequest: Int32?, start: Bool
        ) throws
            -> StoredDownload
        {
            scheduled.append(payload.identifier)
            return try store.schedule(
                StoredDownload(
                    appIdentifier: app.bundleIdentifier, identifier: payload.identifier, url: payload.url,
                    isEssential: payload.isEssential, expectedSize: payload.fileSize))
        }
        func start(_ stored: StoredDownload) { started.append(stored.identifier) }
        func applyCancellations(_ identifiers: [String], of app: String) -> [String] { identifiers }
        func fetchManifest(
            _ url: String, for app: StoredApp,
            done:
                @escaping @Sendable (Result<TransferCoordinator.FetchedManifest, TransferCoordinator.ManifestFailure>)
                -> Void
        ) {
            let path = manifestPath
            executor.async { done(.success(TransferCoordinator.FetchedManifest(path: path, size: 2))) }
        }
        func remainingAllowances(of app: StoredApp) -> (nonEssential: Int64?, essential: Int64?) { (nil, nil) }
        func info(_ download: StoredDownload) -> DownloadInfo {
            DownloadInfo(
                uniqueIdentifier: download.uniqueIdentifier, download: download.download,
                state: download.state, isForeground: download.isForeground,
                bytesOnDisk: download.bytesOnDisk)
        }
        func drop(_ downloads: [StoredDownload]) { drops.append(downloads.map(\.identifier)) }
        func forgetPreparedGroup(_ group: String) { forgottenGroups.append(group) }
    }

    /// The call gate (always open) and the scheduler's reports (executor-confined).
    final class FakeScheduler: AppInstallerDelegate, @unchecked Sendable {
        var asked = 0
        var periodicRuns: [String] = []
        var registrations = 0
        func installer(
            _ installer: AppInstaller, refusalToCall app: StoredApp, kind: ContentRequestKind?, bypassAllowance: Bool
        ) -> String? {
            asked += 1
            return nil
        }
        func installer(_ installer: AppInstaller, periodicRanFor app: String) { periodicRuns.append(app) }
        func installer(_ installer: AppInstaller, registered app: String) { registrations += 1 }
        func installer(_ installer: AppInstaller, uninstalled app: String) {}
    }

    /// The first reply a request got.
    final class ReplyBox: @unchecked Sendable {
        private let lock = NSLock()
        private var reply: ServerMessage.Result?
        func put(_ reply: ServerMessage.Result) { lock.withLock { self.reply = self.reply ?? reply } }
        var value: ServerMessage.Result? { lock.withLock { reply } }
    }

    /// An installer over a fresh store with the app registered (in an app group, with an
    /// extension library and a manifest URL), and its fakes.
    final class Rig: Sendable {
        let directory: TemporaryDirectory
        let store: BAStore
        let executor = ServiceExecutor()
        let containers: AppContainers
        let delivery = FakeDelivery()
        let extensions: FakeExtensions
        let transfers: FakeTransfers
        let scheduler = FakeScheduler()
        let installer: AppInstaller
        let log = LogInbox()

        init() throws {
            directory = try TemporaryDirectory()
            store = try BAStore.open(path: directory.path + "/state.sqlite")
            containers = AppContainers(stateDirectory: directory.path)
            let library = try directory.write("libExtension.so", "not loaded: the extension caller is a fake")
            let manifest = try directory.write("manifest.json", "{}")
            extensions = FakeExtensions(executor: executor)
            transfers = FakeTransfers(store: store, executor: executor, manifestPath: manifest)
            let log = log
            let configuration = BasdServices.Configuration(stateDirectory: directory.path, daemonVersion: "test")
            installer = AppInstaller(
                store: store, containers: containers, configuration: configuration,
                executor: executor, delivery: delivery, extensions: extensions, transfers: transfers,
                packs: NoPackTransfers.service(
                    store: store, directory: directory.path, configuration: configuration, executor: executor),
                log: { log.append($0) })
            installer.delegate = scheduler
            _ = try executor.syncThrowing {
                try installer.register(
                    AppRegistration(
                        bundleIdentifier: AppInstallerAloneTests.app, version: "1.0",
                        appGroupIdentifier: AppInstallerAloneTests.group, appDirectory: directory.path,
                        extensionPath: library),
                    manifestURL: "http://127.0.0.1:9/manifest.json", restrictions: StoredApp.Restrictions())
            }
        }

        /// Runs `start` on the executor and waits for the reply it is handed.
        func reply(
            _ start: @escaping @Sendable (@escaping @Sendable (ServerMessage.Result) -> Void) throws -> Void
        ) async throws -> ServerMessage.Result {
            let box = ReplyBox()
            try executor.syncThrowing { try start { box.put($0) } }
            let deadline = Date(timeIntervalSinceNow: 20)
            while true {
                if let reply = box.value { return reply }
                guard Date() < deadline else { throw HarnessError("no reply: \(log.all.suffix(10))") }
                try await Task.sleep(for: .milliseconds(5))
            }
        }

        func stop() {
            executor.stop()
            directory.remove()
        }
    }

    @Test(
        "an uninstall deletes the app's 250 downloads in slices, drops their transfers, deletes its container and replies"
    )
    func uninstallInSlices() async throws {
        let rig = try Rig()
        defer { rig.stop() }
        #expect(rig.executor.sync { rig.scheduler.registrations } == 1)
        let container = rig.containers.container(group: Self.group)
        #expect(FileManager.default.fileExists(atPath: container))
        for index in 0..<250 {
            try rig.store.schedule(
                StoredDownload(appIdentifier: Self.app, identifier: "d\(index)", url: "http://127.0.0.1:9/d\(index)"))
        }
        // Ten a slice: 25 full slices, an empty one that ends them, then the app's removal.
        rig.executor.sync { rig.installer.uninstallSlice = TurnSize(range: 10...10, start: 10) }

        let result = try await rig.reply { reply in
            rig.installer.uninstall(Self.app, keepData: false, why: "test", reply: reply)
        }
        guard case .uninstalled(let report) = result else {
            Issue.record("not an uninstall report: \(result)")
            return
        }
        #expect(report.wasRegistered)
        #expect(report.cancelledDownloads == 250)
        #expect(report.removedContainer == container)
        #expect(!FileManager.default.fileExists(atPath: container))
        let (drops, forgottenGroups, requested, ended, forgotten) = rig.executor.sync {
            (
                rig.transfers.drops, rig.transfers.forgottenGroups, rig.delivery.requested, rig.delivery.ended,
                rig.delivery.forgotten
            )
        }
        #expect(drops.map(\.count) == Array(repeating: 10, count: 25) + [0, 0])
        #expect(Set(drops.joined()) == Set((0..<250).map { "d\($0)" }))
        #expect(forgottenGroups == [Self.group])
        #expect(requested == ["uninstall"])
        #expect(ended == [1])
        #expect(forgotten == [Self.app])
        #expect(try rig.store.app(Self.app) == nil)
        #expect(try rig.store.downloads(app: Self.app).isEmpty)
    }

    @Test(
        "a simulated periodic run fetches the manifest, calls the extension and schedules its downloads, essential first"
    )
    func simulatedPeriodicRun() async throws {
        let rig = try Rig()
        defer { rig.stop() }
        rig.executor.sync {
            rig.extensions.downloads = [
                DownloadDescription(identifier: "later", url: "http://127.0.0.1:9/later", fileSize: 10),
                DownloadDescription(
                    identifier: "first", url: "http://127.0.0.1:9/first", isEssential: true, fileSize: 10),
            ]
        }
        let manifest = rig.transfers.manifestPath

        let result = try await rig.reply { reply in
            try rig.installer.simulate(.periodic, app: Self.app, reply: reply)
        }
        guard case .extensionRun(let report) = result else {
            Issue.record("not an extension run report: \(result)")
            return
        }
        #expect(report.event == "periodic")
        #expect(report.verdict == ExtensionCallOutcome.ran(BAExtensionRunResult(verdict: .ok)).verdictName)
        #expect(report.manifestBytes == 2)
        #expect(report.scheduled.map(\.download.identifier) == ["first", "later"])
        #expect(report.refused.isEmpty)
        let (requests, scheduled, started, asked, periodicRuns, ended) = rig.executor.sync {
            (
                rig.extensions.requests, rig.transfers.scheduled, rig.transfers.started, rig.scheduler.asked,
                rig.scheduler.periodicRuns, rig.delivery.ended
            )
        }
        #expect(requests == [ContentRequestKind.periodic.rawValue32])
        #expect(scheduled == ["first", "later"])
        // Handed to the engine only once their slice was committed.
        #expect(started == ["first", "later"])
        #expect(asked == 1)
        #expect(periodicRuns == [Self.app])
        #expect(ended == [1])
        // The manifest is the call's alone: gone once it ended.
        #expect(!FileManager.default.fileExists(atPath: manifest))
        #expect(try rig.store.activeDownloads(app: Self.app).map(\.identifier).sorted() == ["first", "later"])
    }
}
