import BADaemonProtocol
import BAExtensionHost
import BAScheduling
import BASettings
import BAStore
import Foundation
import NIOCore

/// When extensions may run (docs/scheduling.md): the owner of each app's scheduling state
/// (periodic runs, the daily runtime allowance, quarantine, launches) and of the scheduler's
/// timer, which starts due periodic runs, retries events held back, re-reads the settings and
/// checks free space.
///
/// It is given what it needs in
/// ``init(store:configuration:executor:settings:refreshSettings:extensions:delivery:purge:transfers:installer:packs:log:)``:
/// the services below it (the event router, the purge service, the installer, the transfers, the
/// extension caller). Those above ask it (``BasdServices``, as their delegate); it reports to nobody.
final class PeriodicScheduler: @unchecked Sendable {
    let store: BAStore
    /// basd's configuration: the clock, where Low Power Mode is read.
    let configuration: BasdServices.Configuration
    /// The executor every method runs on (the timer is armed on it).
    let executor: ServiceExecutor
    /// The settings in force.
    let settingsReader: () -> BasdSettings
    /// Re-reads basd's settings file (each look of the timer).
    let refreshSettings: () -> Void
    /// Whether extension runners can be started.
    let extensions: any ExtensionCalling
    let delivery: EventRouter
    let purge: PurgeService
    let transfers: any SchedulerTransfers
    let installer: any SchedulerInstalling
    /// Asset packs, whose manifests periodic runs check.
    let packs: PackService
    let log: @Sendable (String) -> Void
    /// The scheduler's timer.
    private var timer: Scheduled<Void>?
    /// Whether the timer runs (between ``start()`` and ``stop()``).
    private var running = false
    /// Why the machine is in Low Power Mode, as last read (nil: it is not).
    private(set) var lowPowerMode: String?
    /// The power profile power-profiles-daemon says over D-Bus (``DesktopIntegration``), when it
    /// is on the system bus: it decides, and the profile files are not read.
    private(set) var busPowerProfile: String?
    /// Whether UPower says the machine runs on battery (nil: UPower is not on the system bus);
    /// Low Power Mode when the `lowPowerModeOnBattery` setting is on.
    private(set) var onBattery: Bool?
    var random = SystemRandomNumberGenerator()

    init(
        store: BAStore, configuration: BasdServices.Configuration, executor: ServiceExecutor,
        settings: @escaping () -> BasdSettings, refreshSettings: @escaping () -> Void, extensions: any ExtensionCalling,
        delivery: EventRouter, purge: PurgeService, transfers: any SchedulerTransfers,
        installer: any SchedulerInstalling, packs: PackService,
        log: @escaping @Sendable (String) -> Void
    ) {
        self.packs = packs
        self.store = store
        self.configuration = configuration
        self.executor = executor
        self.settingsReader = settings
        self.refreshSettings = refreshSettings
        self.extensions = extensions
        self.delivery = delivery
        self.purge = purge
        self.transfers = transfers
        self.installer = installer
        self.log = log
    }

    var now: Date { configuration.clock.now }
    var settings: BasdSettings { settingsReader() }

    // MARK: - Per-app state

    func schedulingState(_ app: StoredApp) -> SchedulingState {
        guard let json = app.scheduling else { return SchedulingState() }
        do {
            return try SchedulingState(jsonData: Data(json.utf8))
        } catch {
            log("the scheduling state of \(app.bundleIdentifier) is unreadable (\(error)); starting afresh")
            return SchedulingState()
        }
    }

    func save(_ state: SchedulingState, of app: String) {
        do {
            try store.setScheduling(app: app, String(decoding: try state.jsonData(), as: UTF8.self))
        } catch {
            log("saving the scheduling state of \(app) failed: \(error)")
        }
    }

    /// The app's process connected: a launch (the first one lifts the pre-launch restrictions).
    /// The interval shrinks with use, so a run scheduled far out while the app was idle is brought
    /// closer (never pushed out).
    func recordLaunch(of bundleIdentifier: String) {
        guard let app = try? store.app(bundleIdentifier) else { return }
        let now = self.now
        var state = schedulingState(app)
        state.usage.recordLaunch(at: now)
        if app.extensionPath != nil {
            state.periodic.launched(
                now: now, policy: settings.periodicPolicy, usage: state.usage,
                registeredAt: app.registeredAt, using: &random)
        }
        save(state, of: bundleIdentifier)
        wake()
    }

    // MARK: - Gates

    /// Why the extension of `app` may not be called now (for `kind`), or nil. `bypassAllowance`
    /// (`ba simulate`) skips the daily runtime allowance, nothing else. An install's or update's
    /// call (`kind` `.install` or `.update`) runs in Low Power Mode.
    func refusalToCall(_ app: StoredApp, kind: ContentRequestKind?, bypassAllowance: Bool) -> String? {
        guard let libraryPath = app.extensionPath else { return "the app has no extension (BAExtensionPath)" }
        guard extensions.isAvailable else { return "basd cannot start extension runners (see its log)" }
        guard settings.backgroundActivity else {
            return "background activity is off in basd's settings (backgroundActivity; error 111)"
        }
        // Low Power Mode holds background work (periodic runs, events, background downloads), not
        // an install's or an update's call: the user is waiting for that app's essential content
        // (docs/lifecycle.md#low-power-mode).
        if kind != .install, kind != .update, let reason = checkLowPowerMode() {
            return "Low Power Mode is on (\(reason)): no extension runs until it is off"
        }
        if !app.launched, !settings.inAppContent {
            return
                "in-app content is off in basd's settings (inAppContent): no extension runs before the app's first launch"
        }
        var state = schedulingState(app)
        let identity = ExtensionFileIdentity.current(path: libraryPath)
        if state.quarantine.releaseIfChanged(currentIdentity: identity) {
            log("\(app.bundleIdentifier): the extension file changed; its quarantine is lifted")
            save(state, of: app.bundleIdentifier)
        }
        if let reason = state.quarantine.isQuarantined(currentIdentity: identity) {
            return
                "the extension is quarantined: \(reason); replace its file or run `ba apps --clear-quarantine \(app.bundleIdentifier)`"
        }
        if !bypassAllowance,
            case .refused(let reason, _) = state.allowance.admit(
                now: now, usage: state.usage, policy: settings.runtimeAllowancePolicy)
        {
            return reason
        }
        return nil
    }

    /// The deadline of each call (the `extensionCallTimeoutSeconds` setting, within what is left
    /// of the allowance) and of a runner's calls together (what is left of the allowance, at
    /// least a second; nil when the allowance is bypassed or does not apply).
    func callBudget(for app: StoredApp, bypassAllowance: Bool) -> (perCall: Duration, total: Duration?) {
        var seconds = settings.extensionCallTimeoutSeconds
        var total: Duration? = nil
        if !bypassAllowance {
            let state = schedulingState(app)
            if case .allowed(let remaining) = state.allowance.admit(
                now: now, usage: state.usage, policy: settings.runtimeAllowancePolicy)
            {
                seconds = min(seconds, max(1, remaining))
                total = .milliseconds(Int64(min(max(1, remaining), 366 * 86_400) * 1000))
            }
        }
        return (.milliseconds(Int64(seconds * 1000)), total)
    }

    /// Bookkeeping after any extension call: its runtime counts against the allowance, and a
    /// crash or timeout toward quarantine unless `countsTowardQuarantine` is false (another
    /// failure on an event that failed before: one poisoned event is parked, and counts once).
    func extensionRan(
        _ app: StoredApp, outcome: ExtensionCallOutcome, runtimeMilliseconds: Int64,
        countsTowardQuarantine: Bool = true
    ) {
        guard let current = try? store.app(app.bundleIdentifier) else { return }
        var state = schedulingState(current)
        let settings = self.settings
        state.allowance.record(
            duration: TimeInterval(runtimeMilliseconds) / 1000, at: now,
            policy: settings.runtimeAllowancePolicy)
        let result: RunOutcome =
            switch outcome.verdict {
            case .ok: .ok
            case .crashed: .crashed(outcome.detail ?? "a signal")
            case .timedOut: .timedOut("no answer within the call's deadline")
            case .some(let other): .otherFailure(other.description)
            case nil: .otherFailure(outcome.detail ?? "the runner could not be started")
            }
        let wasQuarantined = state.quarantine.quarantine != nil
        if !countsTowardQuarantine && !outcome.isOK {
            save(state, of: app.bundleIdentifier)
            return
        }
        state.quarantine.record(
            outcome: result, identity: current.extensionPath.flatMap(ExtensionFileIdentity.current(path:)), at: now,
            threshold: settings.quarantineThreshold)
        if !wasQuarantined, let quarantine = state.quarantine.quarantine {
            log("\(app.bundleIdentifier): extension quarantined: \(quarantine.reason)")
        }
        save(state, of: app.bundleIdentifier)
    }

    // MARK: - The timer

    /// Starts the timer on the executor, first firing at once. After each look it is armed for
    /// the next thing due (a periodic run, a free-space check, events held back), and, while apps
    /// with extensions are registered or Low Power Mode is on, at most ``minimumWait`` later (the
    /// power profile and the apps' directories are polled); otherwise it looks once a minute.
    func start() {
        running = true
        schedule(in: 0.05)
    }

    /// Stops the timer (tests drive ``tick()`` themselves).
    func stop() {
        running = false
        timer?.cancel()
        timer = nil
    }

    /// Something changed what is due (an app registered or launched, a run ended, a quarantine
    /// cleared): look again soon.
    func wake() {
        guard running else { return }
        schedule(in: 0.05)
    }

    /// (Re-)arms the timer `seconds` from now: one look then, then armed for what is due.
    private func schedule(in seconds: TimeInterval) {
        timer?.cancel()
        timer = executor.after(.milliseconds(Int64(seconds * 1000))) { [weak self] in
            guard let self, running else { return }
            timer = nil
            tick()
            arm()
        }
    }

    /// The shortest wait between two looks: a quarter of the minimum periodic interval, at least 0.1 s.
    var minimumWait: TimeInterval { min(30, max(0.1, settings.periodicMinimumIntervalSeconds / 4)) }

    /// The longest wait: basd re-reads its settings file at least this often.
    static let maximumWait: TimeInterval = 60

    /// Arms the timer for the next thing due.
    private func arm() {
        guard running, timer == nil else { return }
        let now = self.now
        var next = now.addingTimeInterval(Self.maximumWait)
        if let apps = try? store.apps(), apps.contains(where: { $0.extensionPath != nil }) {
            // The power profile and the apps' directories have no change notification: with apps
            // registered, basd looks at them every `minimumWait` (30 s by default).
            next = min(next, now.addingTimeInterval(minimumWait))
            if let due = nextPeriodicRun(of: apps) { next = min(next, due) }
        }
        if delivery.hasHeldBackEvents { next = min(next, now.addingTimeInterval(minimumWait)) }
        // In Low Power Mode something waits for it to end (a background download, an app's
        // prefetch pack, with or without an extension): the profile is looked at as often.
        if lowPowerMode != nil { next = min(next, now.addingTimeInterval(minimumWait)) }
        if let check = purge.nextCheck { next = min(next, check) }
        schedule(in: max(minimumWait, next.timeIntervalSince(now)))
    }

    /// The first periodic run due of any app with an extension, or nil (``IdleExit``).
    var nextPeriodicRun: Date? { nextPeriodicRun(of: (try? store.apps()) ?? []) }

    /// The first periodic run due of those of `apps` with an extension, or nil.
    private func nextPeriodicRun(of apps: [StoredApp]) -> Date? {
        apps.filter { $0.extensionPath != nil }.compactMap { schedulingState($0).periodic.nextRun }.min()
    }

    /// power-profiles-daemon's `ActiveProfile` changed (nil: it left the system bus, and the
    /// profile files decide again): Low Power Mode follows at once.
    func powerProfileChanged(_ profile: String?) {
        busPowerProfile = profile
        checkLowPowerMode()
    }

    /// UPower's `OnBattery` changed (nil: UPower left the system bus): Low Power Mode follows at
    /// once when the `lowPowerModeOnBattery` setting is on.
    func batteryChanged(_ onBattery: Bool?) {
        self.onBattery = onBattery
        checkLowPowerMode()
    }

    /// Reads the power profile (power-profiles-daemon's over D-Bus, else the files of
    /// ``LowPowerMode``), and UPower's `OnBattery` when the `lowPowerModeOnBattery` setting is on;
    /// on a change, holds background transfers (or lets them go) and logs it.
    /// Returns why Low Power Mode is on, or nil.
    @discardableResult
    func checkLowPowerMode() -> String? {
        var reason: String?
        if let profile = busPowerProfile {
            reason = LowPowerMode.isLowPower(profile) ? "power profile \(profile) (power-profiles-daemon)" : nil
        } else {
            reason = configuration.lowPowerMode.reason()
        }
        if reason == nil, onBattery == true, settings.lowPowerModeOnBattery {
            reason = "on battery (UPower), with the lowPowerModeOnBattery setting"
        }
        guard reason != lowPowerMode else { return reason }
        lowPowerMode = reason
        if let reason {
            log("Low Power Mode is on (\(reason)): no extension runs; background downloads wait")
        } else {
            log("Low Power Mode is off: extensions may run and background downloads go on")
        }
        // The transfers tell the packs (their hold also follows the network).
        transfers.holdBackground(reason != nil)
        return reason
    }

    /// One look at every app (executor).
    func tick() {
        refreshSettings()
        checkLowPowerMode()
        let settings = self.settings
        let now = self.now
        let apps: [StoredApp]
        do {
            apps = try store.apps()
        } catch {
            log("scheduler: reading the apps failed: \(error)")
            return
        }
        for app in apps where app.extensionPath != nil {
            if app.manifestURL != nil, !delivery.isExtensionBusy(app.bundleIdentifier),
                AppInstaller.appDirectoryIsGone(app)
            {
                // Installed from a directory that is gone (the package was removed without
                // `ba uninstall`): uninstall it rather than fail its periodic runs forever.
                log("\(app.bundleIdentifier): its app directory \(app.appDirectory) is gone; uninstalling it")
                installer.uninstall(
                    app.bundleIdentifier, keepData: false, why: "app directory gone", reply: { _ in })
                continue
            }
            var state = schedulingState(app)
            if state.periodic.ensureScheduled(
                now: now, policy: settings.periodicPolicy, usage: state.usage, registeredAt: app.registeredAt,
                using: &random)
            {
                save(state, of: app.bundleIdentifier)
            }
            guard state.periodic.isDue(now: now), !delivery.isExtensionBusy(app.bundleIdentifier) else {
                continue
            }
            if let reason = refusalToCall(app, kind: .periodic, bypassAllowance: false) {
                // Not now: try again in a while (at the window's end when the allowance is used up).
                var until = now.addingTimeInterval(settings.periodicMinimumIntervalSeconds)
                if case .refused(_, let end) = state.allowance.admit(
                    now: now, usage: state.usage, policy: settings.runtimeAllowancePolicy)
                {
                    until = end
                }
                state.periodic.postpone(until: until)
                save(state, of: app.bundleIdentifier)
                log("\(app.bundleIdentifier): periodic run refused: \(reason)")
                continue
            }
            runPeriodic(app)
        }
        delivery.schedulerTick()
        if lowPowerMode == nil {
            packs.checkDue(now: now, interval: settings.periodicMinimumIntervalSeconds)
        }
        purge.checkFreeSpace()
        pruneHistory()
    }

    /// How long ended downloads and acknowledged events stay (for `ba downloads` and `ba events`
    /// history) before they are deleted: a week.
    static let historyRetention: TimeInterval = 7 * 86_400

    /// When the history was last pruned.
    private var lastPrune: Date?

    /// Deletes history older than ``historyRetention`` (at start, then at most once an hour):
    /// ended downloads nothing is owed for and acknowledged events. Undelivered events, active
    /// downloads and tracked finished files are never pruned, so the state file does not grow
    /// without bound.
    func pruneHistory() {
        let now = self.now
        if let last = lastPrune, now >= last, now.timeIntervalSince(last) < 3_600 { return }
        lastPrune = now
        let cutoff = now.addingTimeInterval(-Self.historyRetention)
        // Finished files that are gone are no longer tracked (a purge plan finds them), so
        // their downloads can go too.
        purge.purge(dryRun: true) { [self] _ in pruneHistory(olderThan: cutoff) }
    }

    private func pruneHistory(olderThan cutoff: Date) {
        do {
            let events = try store.pruneDeliveredEvents(olderThan: cutoff)
            let downloads = try store.pruneEndedDownloads(olderThan: cutoff)
            if events + downloads > 0 {
                log("pruned \(downloads) ended download(s) and \(events) event(s) older than a week")
            }
        } catch {
            log("pruning the history failed: \(error)")
        }
    }

    /// A periodic `downloads(for: .periodic)` call; the next run is scheduled from its end.
    func runPeriodic(_ app: StoredApp) {
        log("\(app.bundleIdentifier): periodic run")
        let report = ExtensionRunReport(bundleIdentifier: app.bundleIdentifier, version: app.version)
        installer.callContentRequest(.periodic, of: app, bypassAllowance: false, report: report) { [self] _ in
            periodicRan(app.bundleIdentifier)
        }
    }

    /// After a periodic run (or a simulated one): the next is one interval from now.
    func periodicRan(_ bundleIdentifier: String) {
        guard let current = try? store.app(bundleIdentifier) else { return }
        var state = schedulingState(current)
        state.periodic.ran(
            at: now, policy: settings.periodicPolicy, usage: state.usage,
            registeredAt: current.registeredAt, using: &random)
        save(state, of: bundleIdentifier)
        wake()
    }

    // MARK: - Requests

    func appInfos() throws -> [AppInfo] {
        let settings = self.settings
        let keyWarnings = Dictionary(
            try store.packApps().compactMap { record in record.keyWarning.map { (record.appIdentifier, $0) } },
            uniquingKeysWith: { first, _ in first })
        return try store.apps().map { app in
            let remaining = transfers.remainingAllowances(of: app)
            let state = schedulingState(app)
            let runs = try store.extensionRuns(app: app.bundleIdentifier, limit: 5).map {
                ExtensionRunInfo(
                    event: $0.event.rawValue, verdict: $0.verdict, detail: $0.detail,
                    startedAt: $0.startedAt.timeIntervalSince1970, durationMilliseconds: $0.durationMilliseconds)
            }
            let policy = settings.runtimeAllowancePolicy
            let runtimeLeft = max(
                0, policy.allowance(usage: state.usage, now: now) - state.allowance.used(now: now, policy: policy))
            var info = AppInfo(
                bundleIdentifier: app.bundleIdentifier, version: app.version,
                appGroupIdentifier: app.appGroupIdentifier,
                appDirectory: app.appDirectory, extensionPath: app.extensionPath, launched: app.launched,
                downloadAllowanceRemaining: remaining.nonEssential,
                essentialDownloadAllowanceRemaining: remaining.essential,
                runtimeRemainingSeconds: app.extensionPath == nil ? nil : runtimeLeft,
                nextPeriodicRun: app.extensionPath == nil ? nil : state.periodic.nextRun?.timeIntervalSince1970,
                quarantine: state.quarantine.isQuarantined(
                    currentIdentity: app.extensionPath.flatMap(ExtensionFileIdentity.current(path:))),
                lastRuns: runs)
            info.manifestRetry = installer.manifestRetrySummary(of: app.bundleIdentifier)
            info.packKeyWarning = keyWarnings[app.bundleIdentifier]
            return info
        }
    }

    func clearQuarantine(app bundleIdentifier: String) throws {
        guard let app = try store.app(bundleIdentifier) else {
            throw Refusal(.callerConnectionNotAccepted, "app \(bundleIdentifier) is not registered with basd")
        }
        var state = schedulingState(app)
        state.quarantine.clear()
        save(state, of: bundleIdentifier)
        log("\(bundleIdentifier): quarantine cleared by `ba apps --clear-quarantine`")
        delivery.route(bundleIdentifier)
    }
}
