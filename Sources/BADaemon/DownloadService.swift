import BADaemonProtocol
import BADownloadEngine
import BAExtensionHost
import BAExtensionProtocol
import BAPurge
import BAScheduling
import BAStore
import Foundation

/// basd's download service: joins the store (durable state), the download engine (libcurl) and
/// the extension supervisor, and serves the protocol's requests.
///
/// Everything it owns changes on one serial queue, ``queue``, off the NIO event loops (store
/// calls block on fsync): requests from every connection, the engine's events, and the results of
/// extension runs. So an accepted request is durable before its reply is written, and events
/// leave in the order they were recorded.
///
/// Event routing: an app's events go to its subscribed connections, which acknowledge them;
/// while no connection of the app is subscribed, `finished`, `failed` and `needsCredentials` wake
/// the app's extension in a runner (one call at a time per app, in event order), and are
/// acknowledged when the call ends `ok`. See `docs/architecture.md`.
final class DownloadService: @unchecked Sendable {
    struct Configuration: Sendable {
        var stateDirectory: String
        var daemonVersion: String
        var engine = DownloadEngine.Configuration()
        /// The runner for extension calls; nil finds it next to basd (or `$BA_EXTENSION_RUNNER`).
        var runnerPath: String?
        /// basd's wall clock (the scheduler's "now"); tests may move it.
        var clock: @Sendable () -> Date = { Date() }
        /// The free bytes of the file system holding a path (`statvfs`), compared with the purge
        /// threshold; tests may inject it.
        var freeSpace: @Sendable (String) throws -> Int64 = { path in try PurgePlanner.freeBytes(path: path) }
        /// Extension calls for one event that may fail before basd keeps the event for the app.
        var extensionAttempts = 3
        /// At most one durable progress record per download per this interval (each is an fsync).
        var progressRecordInterval: Duration = .seconds(1)
    }

    let queue = DispatchQueue(label: "basd.download-service")
    let store: BAStore
    let engine: DownloadEngine
    let supervisor: BAExtensionSupervisor?
    let containers: AppContainers
    let configuration: Configuration
    let log: @Sendable (String) -> Void
    let started = ContinuousClock.now
    let connectionCount: @Sendable () -> Int

    // Confined to `queue`.
    var subscribers: [String: [ObjectIdentifier: Session]] = [:]
    var observers: [ObjectIdentifier: Session] = [:]
    var progress: [String: ProgressMark] = [:]
    /// Apps whose extension is in a call (from the manifest fetch to the call's end): one at a time.
    var extensionBusy: Set<String> = []
    /// The event each app's extension was woken for, while that call runs: the event is the
    /// extension's until the call ends (delivered if `ok`, the app's next otherwise), so an app
    /// that connects meanwhile is sent nothing until then.
    var eventInExtension: [String: Int64] = [:]
    /// Content requests (`ba install`, `ba update`, `ba simulate`) waiting for the app's current
    /// extension call to end, in arrival order.
    var waitingCalls: [String: [() -> Void]] = [:]
    var extensionFailures: [Int64: Int] = [:]
    /// Manifest fetches in flight, by engine id (`manifest:UUID`): their engine events go here,
    /// not to the store.
    var manifestFetches: [String: (EngineEvent) -> Void] = [:]
    /// basd's settings file (`STATE_DIR/config.json`), re-read when it changes.
    var settingsFile: SettingsFile
    /// The periodic scheduler's timer.
    var schedulerTimer: (any DispatchSourceTimer)?
    /// When free space was last checked against the purge threshold.
    var lastPurgeCheck: Date?
    var random = SystemRandomNumberGenerator()
    /// Apps whose events wait because their extension may not be woken now (scheduler retries).
    var heldBack: Set<String> = []
    private var eventsTask: Task<Void, Never>?

    /// Where a transfer stands between two durable progress records.
    struct ProgressMark {
        var recordedAt: ContinuousClock.Instant
        var bytes: Int64 = 0
        var totalBytes: Int64?
        /// The download as scheduled, read once per transfer for the transient progress events.
        var download: StoredDownload?
    }

    /// - Parameter settings: basd's settings file, already read (a malformed one stops basd at start).
    init(
        store: BAStore, configuration: Configuration, settings: SettingsFile,
        log: @escaping @Sendable (String) -> Void, connectionCount: @escaping @Sendable () -> Int
    ) {
        self.store = store
        self.configuration = configuration
        self.log = log
        self.connectionCount = connectionCount
        self.containers = AppContainers(stateDirectory: configuration.stateDirectory)
        self.settingsFile = settings
        var engineConfiguration = configuration.engine
        engineConfiguration.backgroundConcurrency = settings.settings.backgroundDownloadConcurrency
        self.engine = DownloadEngine(configuration: engineConfiguration)
        do {
            self.supervisor = try BAExtensionSupervisor(runnerPath: configuration.runnerPath)
        } catch {
            log("extensions cannot be woken: \(error)")
            self.supervisor = nil
        }
    }

    /// Removes manifests left by a previous basd, resumes every active download (from its partial
    /// file) and routes undelivered events; then follows the engine. Call once, before serving.
    func start() {
        let events = engine.events
        eventsTask = Task { [self] in
            for await event in events {
                queue.async { self.handle(event) }
            }
        }
        queue.sync {
            removeLeftoverManifests()
            do {
                let active = try store.activeDownloads()
                for download in active {
                    guard let request = engineRequest(for: download) else { continue }
                    engine.add(request)
                }
                if !active.isEmpty { log("resuming \(active.count) active download(s)") }
                // The log keeps acknowledged events a week (for `ba events` history); undelivered
                // ones are never pruned.
                try store.pruneDeliveredEvents(olderThan: Date(timeIntervalSinceNow: -7 * 86_400))
                for app in try store.apps() { pump(app.bundleIdentifier) }
                startScheduler()
            } catch {
                log("could not resume downloads: \(error)")
            }
        }
    }

    /// Stops the engine (transfers keep their partial files) and waits until queued work is done.
    func shutdown() {
        queue.sync { schedulerTimer?.cancel() }
        engine.shutdown()
        eventsTask?.cancel()
        queue.sync {}
    }

    // MARK: - Engine requests

    /// The engine's request for a stored download, or nil (logged) when it cannot have one.
    func engineRequest(for download: StoredDownload) -> DownloadRequest? {
        guard let group = download.applicationGroupIdentifier else {
            log("download \(download.uniqueIdentifier) has no app group; it cannot be resumed")
            return nil
        }
        do {
            try containers.prepare(group: group)
        } catch {
            log("cannot prepare the container of \(group): \(error)")
            return nil
        }
        let destination = containers.destination(
            group: group, uniqueIdentifier: download.uniqueIdentifier, identifier: download.identifier)
        return DownloadRequest(
            id: download.uniqueIdentifier, url: download.url, destination: destination,
            partialPath: download.partialPath, headers: download.headers,
            // Only an essential download's size is a promise the file must keep (design §4).
            expectedSize: download.isEssential ? download.expectedSize : nil,
            byteLimit: download.restriction?.byteLimit, sha256: download.sha256, priority: download.priority,
            isEssential: download.isEssential, isForeground: download.isForeground,
            allowList: download.restriction?.allowList.map(HostAllowList.init))
    }

    // MARK: - Status

    func status(protocolVersion: Int) -> ServerMessage.Result {
        do {
            let apps = try store.apps().count
            let active = try store.activeDownloadCount()
            let uptime = ContinuousClock.now - started
            let seconds = Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18
            return .status(
                StatusInfo(
                    protocolVersion: protocolVersion, daemonVersion: configuration.daemonVersion, pid: getpid(),
                    uptimeSeconds: seconds, connections: connectionCount(), registeredApps: apps,
                    activeDownloads: active))
        } catch {
            log("status: reading the store failed: \(error)")
            return .error(
                code: DaemonErrorCode.internalError.rawValue, message: "basd could not read its state: \(error)")
        }
    }
}
