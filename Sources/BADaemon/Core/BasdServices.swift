import BADaemonProtocol
import BADownloadEngine
import BAPurge
import BAScheduling
import BASettings
import BAStore
internal import CBASystem
import Foundation

/// basd's services, wired together: the composition root.
///
/// Each service owns its state and is the only one to change it (`docs/architecture.md`):
///
/// | service | owns |
/// |---|---|
/// | ``RequestRouter`` | nothing: decodes a request, calls the owning service, replies |
/// | ``TransferCoordinator`` | the download engine, its ``TransferWindow`` (the store ↔ engine mapping and the waits), progress marks, manifest fetches |
/// | ``EventRouter`` | subscribed sessions and CLI observers, one ``AppDeliveryStateMachine`` per app |
/// | ``ExtensionCaller`` | the extension supervisor; calls and their typed outcomes |
/// | ``AppInstaller`` | install, update, simulate, content-request calls |
/// | ``PeriodicScheduler`` | the scheduler's timer, per-app scheduling state, the call gates |
/// | ``PurgeService`` | purgeable finished files, the free-space check |
/// | ``PackService`` | asset packs: manifest checks, pack jobs, the switch to a new version, the `asset_pack` rows |
/// | ``AppDiscovery`` | the app-registration drop-in folders it watches and what it last saw there |
/// | ``SettingsService`` | basd's settings file |
///
/// All of them run on one serial ``ServiceExecutor`` and read time from one ``ServiceClock``.
/// Each is created here (lazily, on the executor, in ``init``) and given what it needs: each
/// knows only the services below it, and this object is the delegate each lower service reports
/// or asks upward through (``TransferCoordinatorDelegate``, ``ExtensionCallerDelegate``,
/// ``EventRouterDelegate``, ``AppInstallerDelegate``, ``SettingsServiceDelegate``). The
/// ``RequestRouter`` is the top: it is given every service it routes to, and none calls it
/// (`docs/architecture.md` draws the layers).
final class BasdServices: @unchecked Sendable {
    struct Configuration: Sendable {
        var stateDirectory: String
        var daemonVersion: String
        var engine = DownloadEngine.Configuration()
        /// The runner for extension calls; nil finds it next to basd (or `$BA_EXTENSION_RUNNER`).
        var runnerPath: String?
        /// basd's clock; tests move it.
        var clock = ServiceClock()
        /// The free bytes of the file system holding a path (`statvfs`), compared with the purge
        /// threshold and watched while transfers wait for space; tests may inject it.
        var freeSpace: @Sendable (String) throws -> Int64 = { path in try PurgePlanner.freeBytes(path: path) }
        /// Extension calls for one event that may fail before basd keeps the event for the app.
        var extensionAttempts = 3
        /// At most one durable progress record per download per this interval (each is an fsync).
        var progressRecordInterval: Duration = .seconds(1)
        /// How often a transfer waiting for disk space (or a store write waiting to be retried)
        /// looks again.
        var spaceRetryInterval: Duration = .seconds(2)
        /// Where Low Power Mode is read (the platform's power profile); tests point it at a file.
        var lowPowerMode = LowPowerMode.fromEnvironment()
        /// Most background downloads the engine holds at once; the rest of the queue stays in the
        /// store until there is room (``TransferWindow``).
        var engineWindow = 512
        /// Most current downloads an extension call is handed (`current_downloads`,
        /// `fetchCurrentDownloads` in an extension): the request carrying them stays well under the
        /// runner protocol's 4 MiB frame.
        var currentDownloadsLimit = 10_000
        /// Chunk fetches each asset pack being installed keeps in flight.
        var packFetchWindow = 16
        /// The drop-in folders apps are registered in (``AppDiscovery``), in precedence order;
        /// empty (the default here, and in tests that build services in process): none.
        var appDiscoveryFolders: [String] = []
        /// The D-Bus buses of the desktop (``DesktopIntegration``); none by default here (and in
        /// tests that build services in process).
        var desktopBuses = DesktopBusAddresses.none
    }

    let executor = ServiceExecutor()
    let store: BAStore
    let containers: AppContainers
    let configuration: Configuration
    let clock: ServiceClock
    /// basd's log: one line per call, control characters escaped (``LogLine``).
    let log: @Sendable (String) -> Void
    let connectionCount: @Sendable () -> Int
    let startedAt: ContinuousClock.Instant

    // Created on first use, always on the executor (`init` touches each once there).
    private(set) lazy var settings: SettingsService = {
        let settings = SettingsService(file: initialSettings, executor: executor, log: log)
        settings.delegate = self
        return settings
    }()
    private(set) lazy var transfers: TransferCoordinator = {
        let transfers = TransferCoordinator(
            store: store, containers: containers, configuration: configuration, executor: executor,
            settings: { [unowned self] in self.settings.current }, log: log)
        transfers.delegate = self
        return transfers
    }()
    private(set) lazy var delivery: EventRouter = {
        let delivery = EventRouter(
            store: store, configuration: configuration, executor: executor, extensions: extensions,
            transfers: transfers, log: log)
        delivery.delegate = self
        return delivery
    }()
    private(set) lazy var extensions: ExtensionCaller = {
        let extensions = ExtensionCaller(
            store: store, containers: containers, configuration: configuration, executor: executor,
            settings: { [unowned self] in self.settings.current },
            activeDownloads: { [unowned self] app, limit in self.transfers.activeRecords(of: app, limit: limit) },
            log: log)
        extensions.delegate = self
        return extensions
    }()
    private(set) lazy var packs: PackService = {
        let packs = PackService(
            store: store, containers: containers, configuration: configuration, executor: executor,
            transfers: transfers, log: log)
        packs.delegate = self
        return packs
    }()
    private(set) lazy var installer: AppInstaller = {
        let installer = AppInstaller(
            store: store, containers: containers, configuration: configuration, executor: executor,
            delivery: delivery, extensions: extensions, transfers: transfers, packs: packs, log: log)
        installer.delegate = self
        return installer
    }()
    private(set) lazy var scheduler = PeriodicScheduler(
        store: store, configuration: configuration, executor: executor,
        settings: { [unowned self] in self.settings.current },
        refreshSettings: { [unowned self] in self.settings.refresh(because: .schedulerLook) }, extensions: extensions,
        delivery: delivery, purge: purge, transfers: transfers, installer: installer, packs: packs, log: log)
    private(set) lazy var discovery = AppDiscovery(
        folders: configuration.appDiscoveryFolders, store: store, executor: executor, installer: installer,
        clock: clock, log: log)
    private(set) lazy var purge = PurgeService(
        store: store, containers: containers, configuration: configuration, executor: executor,
        settings: { [unowned self] in self.settings.current }, log: log)
    private(set) lazy var requests = RequestRouter(
        store: store, containers: containers, configuration: configuration, executor: executor, transfers: transfers,
        delivery: delivery, installer: installer, scheduler: scheduler, purge: purge, packs: packs,
        releaseMemorySoon: { [unowned self] in self.releaseMemorySoon() }, log: log)
    /// The desktop's D-Bus buses (none when the configuration names none).
    let desktop: DesktopIntegration
    /// Install progress on the launcher, when there is a session bus.
    private(set) lazy var launcher: LauncherProgress? = desktop.session.map { bus in
        LauncherProgress(
            bus: bus, executor: executor, clock: clock,
            isRunning: { [unowned self] app in self.delivery.hasAppSession(app) },
            appDirectory: { [unowned self] app in (try? self.store.app(app))?.appDirectory })
    }
    /// logind's sleep inhibitor, when there is a system bus (made in ``start()``).
    private var sleepInhibitor: SleepInhibitor?
    private let initialSettings: SettingsFile

    /// The executor (tests run their checks on it with `queue.sync`).
    var queue: ServiceExecutor { executor }

    /// - Parameter settings: basd's settings file, already read (a malformed one stops basd at start).
    init(
        store: BAStore, configuration: Configuration, settings: SettingsFile,
        log: @escaping @Sendable (String) -> Void, connectionCount: @escaping @Sendable () -> Int
    ) {
        self.store = store
        self.configuration = configuration
        self.clock = configuration.clock
        self.log = { line in log(LogLine.escaped(line)) }
        self.connectionCount = connectionCount
        self.containers = AppContainers(stateDirectory: configuration.stateDirectory)
        self.initialSettings = settings
        self.startedAt = configuration.clock.instant
        let log = self.log
        self.desktop =
            configuration.desktopBuses == .none
            ? DesktopIntegration() : DesktopIntegration(addresses: configuration.desktopBuses, log: log)
        executor.sync {
            _ = self.settings
            _ = self.transfers
            _ = self.delivery
            _ = self.extensions
            _ = self.packs
            _ = self.installer
            _ = self.scheduler
            _ = self.purge
            _ = self.requests
            _ = self.discovery
            _ = self.launcher
        }
    }

    /// Removes manifests left by a previous basd, resumes every active download (from its partial
    /// file, or recognizing one already complete), routes undelivered events and starts the
    /// scheduler; then follows the engine. Call once, before serving.
    func start() {
        transfers.followEngine()
        executor.sync {
            settings.watch()
            transfers.watchNetwork()
            let executor = executor
            desktop.watchNetworkManager { [weak self] properties in
                guard let self else { return }
                executor.async { self.transfers.networkChanged(properties) }
            }
            if let system = desktop.system {
                let inhibitor = SleepInhibitor(bus: system, log: log) { [weak self] sleeping, checkpointed in
                    guard let self else { return checkpointed() }
                    executor.async { self.transfers.machineSleeps(sleeping, checkpointed: checkpointed) }
                }
                inhibitor.start()
                sleepInhibitor = inhibitor
            }
            desktop.watchPowerProfiles { [weak self] profile in
                guard let self else { return }
                executor.async { self.scheduler.powerProfileChanged(profile) }
            }
            desktop.watchBattery { [weak self] onBattery in
                guard let self else { return }
                executor.async { self.scheduler.batteryChanged(onBattery) }
            }
            transfers.removeLeftoverManifests()
            transfers.resumeActiveDownloads()
            do {
                for app in try store.apps() { delivery.route(app.bundleIdentifier) }
            } catch {
                log("could not route the undelivered events: \(error)")
            }
            packs.resume()
            scheduler.start()
            if !discovery.folders.isEmpty { discovery.start() }
        }
    }

    /// Stops the scheduler and the engine (transfers keep their partial files) and waits until
    /// queued work is done.
    /// Services dropped without ``shutdown()`` (an in-process harness at a test's end) stop their
    /// executor too: work posted later (an extension call's result, a timer) is dropped instead of
    /// reaching through the services' unowned references to what is gone.
    deinit { executor.stop() }

    func shutdown() {
        executor.sync {
            scheduler.stop()
            settings.stop()
            discovery.stop()
            packs.shutdown()
        }
        transfers.shutdown()
        sleepInhibitor?.release()
        desktop.stop()
        // What was queued meanwhile runs; nothing posted later does (a late engine event, a timer).
        executor.sync { executor.stop() }
    }

    /// Whether a return of free heap memory to the kernel is scheduled (executor).
    private var memoryReleaseScheduled = false

    /// Returns free heap memory to the kernel a second from now (once, however often asked): a
    /// long listing's answer is freed after NIO wrote it, and glibc keeps freed memory otherwise.
    func releaseMemorySoon() {
        guard !memoryReleaseScheduled else { return }
        memoryReleaseScheduled = true
        executor.after(.seconds(1)) { [self] in
            memoryReleaseScheduled = false
            // Off the executor: trimming a heap that held a long answer can take a good part of
            // a second, and glibc's malloc_trim is safe from any thread.
            DispatchQueue.global(qos: .utility).async { _ = ba_sys_malloc_trim() }
        }
    }

    /// `status`: basd's version, uptime, connections and counts.
    func status(protocolVersion: Int) -> ServerMessage.Result {
        do {
            let apps = try store.apps().count
            let active = try store.activeDownloadCount()
            let uptime = clock.instant - startedAt
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
