import BACore
import BADaemonProtocol
import BADownloadEngine
import BAScheduling
import BASettings
import BAStore
import Foundation
import Synchronization

typealias EngineEvent = BADownloadEngine.DownloadEvent
typealias WireEvent = BADaemonProtocol.DownloadEvent

/// The only owner of basd's download engine and of the mapping between stored downloads and
/// engine transfers: it adds, promotes, cancels and answers transfers, records the engine's
/// events in the store (then hands each recorded event to the ``EventRouter``), and fetches
/// manifests through the engine.
///
/// It knows no other service: it is given what it needs in ``init(store:containers:configuration:executor:settings:log:)``
/// and reports upward through its ``delegate``.
///
/// Two conditions never leave a download stuck:
/// - **No space** (`ENOSPC`/`EDQUOT` writing a file): the transfer stops keeping its bytes and
///   waits for space, shown as `waitingFor: "space"` in listings; it starts again by itself when
///   the file system has more room than when it stopped.
/// - **A store that cannot be written** (disk full under the state folder): the engine's events
///   are kept, in order, and recorded when a write succeeds again; nothing is lost or reordered.
final class TransferCoordinator: @unchecked Sendable {
    let engine: DownloadEngine
    let store: BAStore
    /// Where each app group's partial and finished files go.
    let containers: AppContainers
    /// basd's configuration: the engine's, its window, the intervals, the free-space probe, the state folder.
    let configuration: BasdServices.Configuration
    /// The executor every method runs on (timers and the engine's events are posted to it).
    let executor: ServiceExecutor
    /// basd's clock.
    let clock: ServiceClock
    /// The settings in force, read when a download is scheduled or a request made, so an edit
    /// applies to the next one.
    let settings: () -> BasdSettings
    let log: @Sendable (String) -> Void
    /// Who is told what happened to downloads (``BasdServices``); weak, as it owns the coordinator.
    weak var delegate: (any TransferCoordinatorDelegate)?

    /// Where a transfer stands between two durable progress records.
    struct ProgressMark {
        var recordedAt: ContinuousClock.Instant
        var bytes: Int64 = 0
        var totalBytes: Int64?
        /// The download as scheduled, read once per transfer for the transient progress events.
        var download: StoredDownload?
    }

    // Executor-confined state.
    /// Where each download in basd's hands stands (in the engine, waiting for space or to retry,
    /// unstartable), whether rows wait in the store, Low Power Mode's hold, and the armed look:
    /// the window's rules, without I/O (``TransferWindow``).
    var window: TransferWindow
    /// What the engine last reported of each running transfer (a measure, not a place: listings
    /// and the progress records read it).
    var progress: [String: ProgressMark] = [:]
    /// Manifest and asset-pack fetches in flight, by engine id (`manifest:UUID`, `pack:…`): their
    /// engine events go here, not to the store.
    var sideFetches: [String: (EngineEvent) -> Void] = [:]
    /// The background side fetches in flight (a prefetch pack's files), by engine id, and whether
    /// the engine runs them: one it has not started waits for its background concurrency, as a
    /// queued download does (``PackTransfers/fetchesWaitInQueue(_:)``).
    var backgroundSideFetches: [String: SideFetchState] = [:]
    /// The app groups whose transfer folders were checked (and legacy partial files removed)
    /// since basd started: once per group, not once per download.
    var preparedGroups: Set<String> = []
    /// Engine events the store could not record yet (in arrival order).
    var unrecorded: [EngineEvent] = []
    /// Engine events not yet taken by the executor (the engine's task appends, one executor
    /// turn takes them all).
    private let arriving = Inbox<EngineEvent>()
    /// How many engine events one turn of the executor handles (``TurnSize``). It starts low and
    /// doubles with each quick full turn: started at 1,000, the first batch of an install's
    /// 10,000 essential downloads (their `began` events) held the executor 100 ms (release
    /// build, two busy cores; issue 33).
    private var engineEventTurn = TurnSize(range: 50...20_000, start: 100)
    /// Network changes cut retry waits short.
    var networkMonitor: DescriptorWatcher?
    /// Downloads cancelled lately (their rows are gone): who and when, for a second `ba cancel`.
    var cancelledLately: [String: String] = [:]
    /// Transfers waiting out a retry's backoff: their next `began` is an attempt, not a beginning.
    var waitingToRetry: Set<String> = []
    /// Self-hosted asset pack downloads the pack service is installing (the window counts them as
    /// transfers in the engine; ``TransferCoordinator/startPack(_:)``).
    var packDownloads: Set<String> = []
    /// Servers that give no answer, by ``ServerGate/key(of:)`` (the engine's ``DownloadEvent/serverWaiting(server:reason:nextProbeIn:waiting:)``).
    var serverWaits: [String: ServerWait] = [:]
    private var eventsTask: Task<Void, Never>?
    /// Whether Low Power Mode is on (the scheduler reads the power profile, or power-profiles-daemon tells).
    var lowPowerMode = false
    /// What NetworkManager last said (``NetworkConditions/unknown`` without it).
    var network = NetworkConditions.unknown
    /// Whether the engine holds transfers that may not use a metered network.
    var meteredHeld = false
    /// The background hold last told to the delegate.
    var reportedBackgroundHold: NetworkConditions.Hold?

    deinit { networkMonitor?.stop() }

    /// A coordinator with its own engine (started at once, configured by `configuration.engine`,
    /// the settings' background concurrency and basd's user agent); set ``delegate`` before
    /// ``followEngine()``.
    init(
        store: BAStore, containers: AppContainers, configuration: BasdServices.Configuration,
        executor: ServiceExecutor, settings: @escaping () -> BasdSettings, log: @escaping @Sendable (String) -> Void
    ) {
        self.store = store
        self.containers = containers
        self.configuration = configuration
        self.executor = executor
        self.clock = configuration.clock
        self.settings = settings
        self.log = log
        var engineConfiguration = configuration.engine
        engineConfiguration.backgroundConcurrency = settings().backgroundDownloadConcurrency
        if engineConfiguration.userAgent == nil {
            engineConfiguration.userAgent = "basd/\(configuration.daemonVersion) (swift-background-assets)"
        }
        engine = DownloadEngine(configuration: engineConfiguration)
        window = TransferWindow(window: configuration.engineWindow)
    }

    /// Forwards the engine's events to the executor, in batches: events that arrive while the
    /// executor is busy are taken together in its next turn and recorded in one transaction
    /// (group commit). Call once.
    func followEngine() {
        let batches = engine.events.batches
        let executor = executor
        eventsTask = Task { [self] in
            for await events in batches {
                guard arriving.put(events) else { continue }
                executor.async { self.handleArriving() }
            }
        }
    }

    /// Handles the engine events that arrived, as many as fit one turn of about 10 ms
    /// (``engineEventTurn``); the rest in later turns, in order, with other clients served in
    /// between (issue 19: 10,000 transfers' events took 60 ms in one turn of a debug build).
    private func handleArriving() {
        let started = ContinuousClock.now
        let (events, more) = arriving.take(atMost: engineEventTurn.current)
        let commit = handle(events)
        engineEventTurn.record(events.count, took: ContinuousClock.now - started, fixed: commit)
        if more { executor.yielding { self.handleArriving() } }
    }

    /// Hands the active downloads to the engine, which resumes each from its partial file: the
    /// foreground and essential ones, then the engine's window of the rest in queue order (the
    /// others follow as transfers end, ``TransferWindow``), without reading every queued row at start.
    /// One whose file is already complete at its destination (basd died between the rename and
    /// its record) is recorded finished without fetching a byte, when its turn comes.
    func resumeActiveDownloads() {
        do {
            for download in try store.urgentActiveDownloads() where !recognizeCompleteFile(download) {
                perform(window.handle(.admit(.init(download))), row: download)
            }
            perform(window.handle(.restarted))
            let resumed = window.inEngineCount
            if resumed > 0 {
                log(
                    "resuming \(resumed) active download(s)\(window.parked ? "; the rest of the queue follows as they end" : "")"
                )
            }
        } catch {
            log("could not resume downloads: \(error)")
        }
    }

    /// Stops the engine; transfers keep their partial files.
    func shutdown() {
        networkMonitor?.stop()
        engine.shutdown()
        eventsTask?.cancel()
    }

    func setBackgroundConcurrency(_ count: Int) { engine.setBackgroundConcurrency(count) }

    // MARK: - Engine requests

    /// The engine's request for a stored download, or nil (logged) when it cannot have one.
    func engineRequest(for download: StoredDownload) -> DownloadRequest? {
        guard let group = download.applicationGroupIdentifier else {
            log("download \(download.uniqueIdentifier) has no app group; it cannot be resumed")
            return nil
        }
        if !preparedGroups.contains(group) {
            do {
                try containers.prepare(group: group)
            } catch {
                log("cannot prepare the folders of \(group): \(error)")
                return nil
            }
            containers.removeLegacyPartialFiles(group: group)
            preparedGroups.insert(group)
        }
        return DownloadRequest(
            id: download.uniqueIdentifier, url: download.url, destination: destination(of: download),
            partialPath: partialPath(of: download), headers: download.headers,
            // Only an essential download's size is a promise the file must keep (design §4).
            expectedSize: download.isEssential ? download.expectedSize : nil,
            byteLimit: download.restriction?.byteLimit, sha256: download.sha256, priority: download.priority,
            isEssential: download.isEssential, isForeground: download.isForeground,
            allowList: download.restriction?.allowList.map(HostAllowList.init), trust: trust,
            validator: download.validator, allowsMeteredNetwork: download.download.allowsExpensiveNetworkAccess)
    }

    /// Which servers manifests and downloads trust, and how: basd's `caFile`, `caDirectory` and
    /// `pinnedPublicKey` settings (none: the system's CAs), and its `allowedHosts` (none: every host),
    /// read when a request is made, so an edit applies to the next one.
    var trust: DownloadRequest.Trust {
        let settings = settings()
        return DownloadRequest.Trust(
            caFile: settings.caFile, pinnedPublicKey: settings.pinnedPublicKey, caDirectory: settings.caDirectory,
            allowedHosts: settings.allowedHosts.map { HostAllowList($0, owner: "basd's allowedHosts setting") })
    }

    /// Where a download's finished file goes: basd's own `finished/` folder of its group, never a
    /// path inside the container (``AppContainers``).
    func destination(of download: StoredDownload) -> String {
        containers.destination(
            group: download.applicationGroupIdentifier ?? "", uniqueIdentifier: download.uniqueIdentifier,
            identifier: download.identifier)
    }

    /// A download's partial file, in basd's own `partial/` folder of its group (a path stored by
    /// an older basd, inside the container, is not used).
    func partialPath(of download: StoredDownload) -> String {
        containers.partialPath(
            group: download.applicationGroupIdentifier ?? "", uniqueIdentifier: download.uniqueIdentifier,
            identifier: download.identifier)
    }

    // MARK: - Requests on transfers

    func promote(_ download: StoredDownload) throws {
        let promoted = try store.promote(uniqueIdentifier: download.uniqueIdentifier)
        perform(window.handle(.promoted(.init(promoted))), row: promoted)
    }

    /// Cancels the app's active download `identifier`; `by` says who asked (the log, the CLI's event).
    func cancel(app: String, identifier: String, by: String = "the app") throws {
        let download = try store.cancel(app: app, identifier: identifier)
        log(
            "download \(download.uniqueIdentifier) (\(app) \(identifier)) cancelled by \(by) "
                + "at \(download.bytesOnDisk) bytes")
        noteCancelled(download, by: by)
        progress[download.uniqueIdentifier] = nil
        waitingToRetry.remove(download.uniqueIdentifier)
        perform(window.handle(.cancelled(download.uniqueIdentifier)), row: download)
    }

    /// Answers a credential request: a user and password with disposition 0 (use credential);
    /// anything else fails the transfer with an authentication error.
    func respond(to uniqueIdentifier: String, disposition: Int, user: String?, password: String?) {
        if disposition == 0, let user, let password {
            engine.respond(to: uniqueIdentifier, with: .useCredential(.init(user: user, password: password)))
        } else {
            engine.respond(to: uniqueIdentifier, with: .cancel)
        }
    }

    /// The app's first launch: its active downloads drop their byte limits and allow-lists in the
    /// running engine too (the store cleared them in ``BAStore/markLaunched(app:)``), keeping every
    /// byte already on disk.
    func liftRestrictions(of bundleIdentifier: String) {
        do {
            for download in try store.activeDownloads(app: bundleIdentifier) {
                engine.liftRestrictions(download.uniqueIdentifier)
            }
        } catch {
            log("lifting the pre-launch restrictions of \(bundleIdentifier)'s downloads failed: \(error)")
        }
    }

    // MARK: - Listings

    /// Each download waiting in the queue (``TransferWindow/waitsInQueue(_:now:)``) by its place, 1
    /// for the next to start: the engine's waiting transfers in its order, then the rows in the
    /// store in queue order. One pass: the engine's few hundred at most, then one query walking
    /// the store's queue-order index (100,000 queued downloads are one read, not one per row).
    func queuePositions() -> [String: Int] {
        var positions: [String: Int] = [:]
        var place = 0
        for id in window.engineQueue(now: clock.now) {
            place += 1
            positions[id] = place
        }
        guard window.parked else { return positions }
        do {
            let stored = try store.queuedDownloadIdentifiers(excluding: Set(window.places.keys))
            positions.reserveCapacity(place + stored.count)
            for id in stored {
                place += 1
                positions[id] = place
            }
        } catch {
            log("reading the queue's order for a listing failed: \(error); places are not shown")
        }
        return positions
    }

    /// Whether the active download `id` waits for the background concurrency (``queuePositions()``
    /// has its place).
    func waitsInQueue(_ id: String) -> Bool { window.waitsInQueue(id, now: clock.now) }

    /// A download as a single answer shows it (a queued one without its place).
    func info(_ download: StoredDownload) -> DownloadInfo { info(download, queuePositions: nil) }

    /// A download as listings show it: its bytes as the engine last reported them, and what it
    /// waits for (`queuePositions`, from ``queuePositions()``, gives a queued download its place;
    /// without it the place is not shown).
    func info(_ download: StoredDownload, queuePositions: [String: Int]?) -> DownloadInfo {
        // A running transfer's bytes as the engine last reported them: the store records progress
        // at most once a second (each record is an fsync), so it can be a second behind.
        var bytes = download.bytesOnDisk
        if download.state.isActive, let mark = progress[download.uniqueIdentifier] { bytes = max(bytes, mark.bytes) }
        var info = DownloadInfo(
            uniqueIdentifier: download.uniqueIdentifier, download: download.download, state: download.state,
            isForeground: download.isForeground, bytesOnDisk: bytes,
            appIdentifier: download.appIdentifier, attempts: download.attempts, errorCode: download.lastError?.code,
            errorMessage: download.lastError?.message)
        guard download.state.isActive else { return info }
        let now = clock.now
        let place = window.place(of: download.uniqueIdentifier)
        if case .inEngine(_, .some) = place, let server = serverWait(of: download.url) {
            // Its server gives no answer: it goes on when the server answers (one transfer tries it).
            info.waitingFor = "server"
            info.errorMessage = server.reason
            info.nextAttemptAt = server.nextAttemptAt.timeIntervalSince1970
            return info
        }
        switch place {
        case .waitingForSpace: info.waitingFor = "space"
        case .inEngine(_, .some(let wait)) where wait.until > now:
            info.waitingFor = "retry"
            info.errorMessage = wait.reason
            info.nextAttemptAt = wait.until.timeIntervalSince1970
        case .inEngine(_, let wait):
            // The wait to retry is over (or there was none) and the engine has not begun it: a
            // background transfer waits for a slot, its last failure still said.
            if window.waitsInQueue(download.uniqueIdentifier, now: now) {
                info.waitingFor = "queue"
                info.queuePosition = queuePositions?[download.uniqueIdentifier]
                if let wait { info.errorMessage = wait.reason }
            }
        case nil:
            if window.waitsInQueue(download.uniqueIdentifier, now: now) {
                info.waitingFor = "queue"
                info.queuePosition = queuePositions?[download.uniqueIdentifier]
            }
        case .unstartable:
            break
        }
        // Over a retry wait (whose reason and time stay shown): a held transfer does not retry.
        // (The settings are read only when something holds anything: a listing has many rows.)
        if lowPowerMode || network.metered || network.connectivity.isRestricted {
            let transfer = NetworkConditions.Transfer(
                isUrgent: download.isEssential || download.isForeground,
                allowsMetered: download.download.allowsExpensiveNetworkAccess)
            if let hold = hold(of: transfer) {
                info.waitingFor = hold.rawValue
                info.queuePosition = nil
            }
        }
        return info
    }

    /// The active downloads of `app`, as the extension host passes them.
    func activeRecords(of app: String, limit: Int = .max) -> [DownloadDescription] {
        ((try? store.activeDownloads(app: app, limit: limit)) ?? []).map(\.download)
    }
}
