import BACore
import BADaemonProtocol
import BAPacks
import BAStore
import Foundation

/// What the pack service needs of the transfers: files fetched through the download engine
/// (the ``TransferCoordinator``).
protocol PackTransfers: AnyObject {
    /// Why background transfers are held (Low Power Mode, a metered network…), or nil: a pack
    /// that is not essential waits for the same.
    var backgroundHold: NetworkConditions.Hold? { get }
    func fetchPackFile(
        _ fetch: TransferCoordinator.PackFetch, for app: StoredApp,
        done: @escaping (Result<String, TransferCoordinator.PackFetchFailure>) -> Void)
    func cancelPackFetch(_ id: String)
    /// Like ``fetchPackFile(_:for:done:)``, and `progress` hears the bytes of the file so far
    /// (at most every 100 ms, on the executor).
    func fetchPackFile(
        _ fetch: TransferCoordinator.PackFetch, for app: StoredApp, progress: @escaping (Int64) -> Void,
        done: @escaping (Result<String, TransferCoordinator.PackFetchFailure>) -> Void)
    /// Whether the server of `url` gives no answer now (its fetches wait for it), and why.
    func serverWait(of url: String) -> TransferCoordinator.ServerWait?
    /// Whether every one of the pack fetches `ids` in flight waits for the engine's background
    /// concurrency (none started): the pack says it waits in the queue.
    func fetchesWaitInQueue(_ ids: some Collection<String>) -> Bool
}

extension TransferCoordinator: PackTransfers {
    var backgroundHold: NetworkConditions.Hold? { window.backgroundHeld ? backgroundHoldReason : nil }
}

extension PackTransfers {
    func fetchPackFile(
        _ fetch: TransferCoordinator.PackFetch, for app: StoredApp, progress: @escaping (Int64) -> Void,
        done: @escaping (Result<String, TransferCoordinator.PackFetchFailure>) -> Void
    ) { fetchPackFile(fetch, for: app, done: done) }
    func serverWait(of url: String) -> TransferCoordinator.ServerWait? { nil }
}

/// Who hears what happens to packs (``BasdServices``, which hands the events to the CLI observers).
protocol PackServiceDelegate: AnyObject {
    func packs(_ service: PackService, sent event: PackEvent)

    /// Asks `app`'s extension (`shouldDownload(_:)`) about `packs`, once, in one call; `decided`
    /// gets the IDs it declined, on the executor: none when it cannot be asked or the call fails.
    func packs(
        _ service: PackService, askExtensionOf app: StoredApp, about packs: [AssetPackRecord],
        decided: @escaping (_ declined: Set<String>) -> Void)

    /// The language of `app`'s localized packs changed: its extension is told
    /// (`BAContentRequest.languageChange`).
    func packs(_ service: PackService, languageChangedFor app: StoredApp)

    /// A self-hosted pack download (``PackService/startSelfHosted(_:app:)``) began, progressed or
    /// ended: the transfer coordinator records it as a transfer's.
    func packs(_ service: PackService, selfHostedDownload uniqueIdentifier: String, report: SelfHostedPackReport)
}

/// The owner of every app's asset packs: the download manifest checks, one ``PackJob`` per pack
/// being installed or updated, the switch to a new version, obsolete and old versions' removal,
/// and the `asset_pack` rows (`docs/packs.md`, "On the device").
///
/// Files live in basd's own folder (``AppContainers/packRoot(app:)``): versions, staging, the
/// indexes of local versions, and the `AssetPacks/ID` links the app reads through
/// `CONTAINER/AssetPacks`. It knows only the store and the transfers, given in `init`, and
/// reports through its ``delegate``.
final class PackService: @unchecked Sendable {
    struct Key: Hashable, Sendable, CustomStringConvertible {
        var app: String
        var pack: String
        var description: String { "\(pack) of \(app)" }
    }

    typealias Entry = PackPublisher.DownloadManifest.Entry

    let store: BAStore
    let containers: AppContainers
    let executor: ServiceExecutor
    let clock: ServiceClock
    let transfers: any PackTransfers
    let log: @Sendable (String) -> Void
    /// The free bytes of the file system holding a path.
    let freeSpace: @Sendable (String) throws -> Int64
    /// How often a pack waiting for space, or an old version still held, is looked at again.
    let retryInterval: Duration
    weak var delegate: (any PackServiceDelegate)?

    // Executor-confined state.
    /// Packs being installed or updated.
    var jobs: [Key: PackJob] = [:]
    /// The self-hosted pack downloads being installed: the download's unique identifier by pack.
    var selfHosted: [Key: String] = [:]
    /// Manifest checks in flight, by app: everyone waiting for it.
    var checks: [String: [CheckDone]] = [:]
    /// `reconcileLanguages` requests waiting for their app's language to be in place, by app.
    var languageWaits: [String: [CheckDone]] = [:]
    /// Each app's primary language (`CFBundleDevelopmentRegion`) once read, by app (nil inside: it
    /// has none); forgotten when the app is installed or updated again.
    var primaryLanguages: [String: String?] = [:]
    /// Versions replaced or obsolete that a process still held when basd tried to remove them.
    var heldVersions: Set<HeldVersion> = []
    var heldTimerArmed = false
    /// Each pack's serial queue for its files (``packQueue(_:)``).
    var packQueues: [Key: DispatchQueue] = [:]
    var fetchSequence = 0
    /// Chunk fetches in flight per job.
    let fetchWindow: Int
    /// Bundle fetches in flight per job.
    let bundleWindow = 4
    /// I/O off the executor: index files, staging, verification, removal.
    let io = DispatchQueue(label: "basd-packs", qos: .utility)

    struct HeldVersion: Hashable, Sendable {
        var key: Key
        var version: Int
        var replaced = false
    }

    init(
        store: BAStore, containers: AppContainers, configuration: BasdServices.Configuration,
        executor: ServiceExecutor, transfers: any PackTransfers, log: @escaping @Sendable (String) -> Void
    ) {
        self.store = store
        self.containers = containers
        self.executor = executor
        self.clock = configuration.clock
        self.transfers = transfers
        self.log = log
        self.freeSpace = configuration.freeSpace
        self.retryInterval = configuration.spaceRetryInterval
        self.fetchWindow = configuration.packFetchWindow
    }

    /// Resumes what a previous basd left: each pack being assembled goes on from what is verified
    /// in its staging folder, each row learns the version its link really points at, and versions
    /// no longer current go once nothing holds them. Call once at start.
    func resume() {
        let rows: [PackRow]
        do {
            rows = try self.rows(app: nil)
        } catch {
            log("cannot read the asset packs to resume them: \(error)")
            return
        }
        cleanUpAtStart(rows: rows)
        for row in rows {
            let key = Key(app: row.appIdentifier, pack: row.packID)
            let root = containers.packRoot(app: row.appIdentifier)
            var row = row
            let linked: Int?
            do throws(PackError) {
                linked = try PackInstallation.current(root: root, id: row.packID)
            } catch {
                log("asset pack \(key): \(error)")
                continue
            }
            if linked != row.localVersion {
                // The switch is the truth: a kill between it and the row's update leaves the row behind.
                log(
                    "asset pack \(key): its link says version \(linked.map(String.init) ?? "none"), the store \(row.localVersion.map(String.init) ?? "none"); the link wins"
                )
                row.localVersion = linked
                if let target = row.target, target.version == linked { row.target = nil }
                save(row)
            }
            for version in (try? PackInstallation.versions(root: root, id: row.packID)) ?? [] where version != linked {
                removeWhenFree(key, version: version)
            }
            if let target = row.target,
                let app = logged("asset pack \(key): not resumed", { try store.app(row.appIdentifier) }) ?? nil
            {
                // In flight when the last basd ended without its clean shutdown (which sets the
                // count back to 0): after `parkAfter` such exits in a row the job may be what
                // killed it, so it waits for `ba packs ensure` instead of starting again.
                row.interruptedStarts += 1
                if row.interruptedStarts >= Self.parkAfter {
                    park(key, row: row, version: target.version)
                    continue
                }
                save(row)
                log("asset pack \(key): resuming version \(target.version)")
                // The local version as the target: a repair that was under way.
                startJob(key, app: app, entry: target, essential: false, repair: target.version == linked)
            }
        }
    }

    /// Acts on every pack of `app` as `trigger` calls for.
    func apply(_ trigger: PackDecision.Trigger, to app: StoredApp) {
        let rows: [PackRow]
        do { rows = try self.rows(app: app.bundleIdentifier) } catch {
            log("asset packs of \(app.bundleIdentifier): \(error)")
            return
        }
        let localized = rows.contains { $0.entry?.language != nil }
        let choice =
            localized
            ? logged("asset packs of \(app.bundleIdentifier): the language") {
                try languageChoice(app: app, rows: rows)
            } : nil
        for row in rows { act(on: row, app: app, trigger: trigger, language: choice) }
        if localized || languageWaits[app.bundleIdentifier] != nil { settleLanguages(app: app.bundleIdentifier) }
    }

    /// Acts on one pack; a localized one only in the app's language (`language`: read when nil),
    /// unless it is a request (``proceedsWithLanguage(_:trigger:choice:)``).
    @discardableResult
    func act(
        on row: PackRow, app: StoredApp, trigger: PackDecision.Trigger, language: LanguageChoice? = nil
    ) -> PackDecision.Action {
        if row.entry?.language != nil,
            !proceedsWithLanguage(
                row, trigger: trigger, choice: language ?? languageChoice(app: app.bundleIdentifier)?.choice)
        {
            return .none
        }
        let key = row.key
        let entry = row.entry
        let action = PackDecision.action(
            policy: entry?.downloadPolicy, serverVersion: entry?.version, localVersion: row.localVersion,
            requested: row.requested, trigger: trigger, declined: row.declined,
            parked: row.failureCode == Self.parkedCode)
        switch action {
        case .none:
            break
        case .download(let essential):
            guard let entry else { break }
            if let job = jobs[key] {
                // Already on its way: an essential wait only makes it more urgent; fetches in
                // flight made as background ones (held on a metered network, in Low Power
                // Mode) are made again as urgent ones (``restartsWhenUrgent(_:)``).
                if job.entry.version == entry.version, !(essential && restartsWhenUrgent(job)) {
                    if essential { job.essential = true }
                    break
                }
                stopJob(key)
            }
            var row = row
            row.target = entry
            row.clearFailure()
            save(row)
            startJob(key, app: app, entry: entry, essential: essential)
        case .removeObsolete:
            guard let local = row.localVersion else { break }
            stopJob(key)
            log("asset pack \(key) is obsolete (no longer in the manifest): version \(local) is removed")
            removePack(key, row: row, forget: true)
            send(PackEvent(.obsolete, appIdentifier: key.app, assetPackID: key.pack, version: local))
        case .forget:
            stopJob(key)
            do { try store.deletePack(app: key.app, pack: key.pack) } catch { log("asset pack \(key): \(error)") }
        }
        return action
    }

    /// When the scheduler's tick next checks an app's pack manifest (``checkDue(now:interval:)``),
    /// or nil when no app has asset packs (``IdleExit``).
    func nextManifestCheck(interval: TimeInterval) -> Date? {
        guard let apps = try? store.packApps() else { return nil }
        let now = clock.now
        return apps.filter { checks[$0.appIdentifier] == nil }.map {
            Self.checkDue(of: $0, now: now, interval: interval)
        }
        .min()
    }

    /// When the app's manifest is next due to be checked: `interval` after its last check; now
    /// when it was never checked, or its last check is later than now (the clock went back).
    static func checkDue(of record: StoredPackApp, now: Date, interval: TimeInterval) -> Date {
        guard let checked = record.checkedAt, checked <= now else { return now }
        return checked.addingTimeInterval(interval)
    }

    /// The scheduler's tick: each app whose manifest was last read `interval` ago or more is
    /// checked again, and local packs the server has new versions of are updated in the background.
    func checkDue(now: Date, interval: TimeInterval) {
        guard let apps = try? store.packApps() else { return }
        for record in apps where checks[record.appIdentifier] == nil {
            guard Self.checkDue(of: record, now: now, interval: interval) <= now else { continue }
            guard let app = try? store.app(record.appIdentifier) else { continue }
            log("asset packs of \(record.appIdentifier): periodic manifest check")
            check(app, trigger: .periodic) { _ in }
        }
    }

    // MARK: Requests

    /// `ba packs ensure`: makes the pack local (and, with `requireLatest`, current). Answers once
    /// it is on its way or local; a pack the manifest does not list is looked for in a fresh copy.
    func ensure(
        app name: String, pack: String, requireLatest: Bool, reply: @escaping @Sendable (ServerMessage.Result) -> Void
    ) {
        guard let app = store.registeredApp(name, orReply: reply) else { return }
        let perform: @Sendable () -> ServerMessage.Result = { [self] in
            let found: PackRow?
            do { found = try row(Key(app: name, pack: pack)) } catch {
                return Refusal(.internalError, "basd could not read its asset packs: \(error)").result
            }
            guard var row = found, row.entry != nil else {
                return Refusal(
                    .invalidRequest,
                    "\(name)'s download manifest lists no asset pack \"\(pack)\" (`ba packs --app \(name)` lists those it has)"
                ).result
            }
            row.requested = true
            save(row)
            act(on: row, app: app, trigger: .ensure(requireLatest: requireLatest))
            return .packs(PackReport(packs: listing(app: name).filter { $0.assetPackID == pack }))
        }
        let known: Bool
        do { known = try row(Key(app: name, pack: pack))?.entry != nil } catch {
            reply(Refusal(.internalError, "basd could not read its asset packs: \(error)").result)
            return
        }
        guard (try? store.packApps())?.contains(where: { $0.appIdentifier == name }) == true else {
            reply(
                Refusal(
                    .invalidRequest,
                    "\(name) has no asset packs: its Info.plist needs BAHasManagedAssetPacks and BAManifestURL, then `ba update`"
                ).result)
            return
        }
        if known && !requireLatest {
            reply(perform())
            return
        }
        check(app, trigger: .periodic) { [self] failure in
            executor.async {
                if let failure, !known {
                    reply(Refusal(failure.code, failure.message).result)
                } else {
                    reply(perform())
                }
            }
        }
    }

    /// An app cancelled a pack's download (its `Progress`): the job stops (what is verified in
    /// staging stays), the request is forgotten, and a `failed` event says so.
    func cancel(app name: String, pack: String) -> ServerMessage.Result {
        let key = Key(app: name, pack: pack)
        let found: PackRow?
        do { found = try row(key) } catch {
            return Refusal(.internalError, "basd could not read its asset packs: \(error)").result
        }
        guard var row = found else {
            return Refusal(.invalidRequest, "\(name) has no asset pack \"\(pack)\"").result
        }
        if let job = jobs[key] {
            let version = job.entry.version
            stopJob(key)
            log("asset pack \(key): the app cancelled the download of version \(version)")
            send(PackEvent(.failed(.cancelled), appIdentifier: name, assetPackID: pack, version: version))
        }
        if row.requested || row.target != nil {
            row.requested = false
            row.target = nil
            save(row)
        }
        return .packs(PackReport(packs: listing(app: name).filter { $0.assetPackID == pack }))
    }

    /// `ba packs verify`: reads every local file of `app`'s packs against its index.
    func verify(app name: String, repair: Bool, reply: @escaping @Sendable (ServerMessage.Result) -> Void) {
        let rows: [PackRow]
        do { rows = try self.rows(app: name) } catch {
            reply(Refusal(.internalError, "basd could not read its asset packs: \(error)").result)
            return
        }
        let root = containers.packRoot(app: name)
        let local = rows.compactMap { row in row.localVersion.map { (row.packID, $0) } }
        io.async { [self] in
            var problems: [String] = []
            var damaged: [String] = []
            for (pack, version) in local {
                let found = PackVerification.verify(
                    root: root, index: indexPath(app: name, pack: pack, version: version))
                if !found.isEmpty { damaged.append(pack) }
                problems += found.map { "\(pack) \(version): \($0)" }
            }
            executor.async { [self, problems, damaged] in
                if repair, let app = try? store.app(name) {
                    for pack in damaged {
                        guard var row = readRow(Key(app: name, pack: pack)), let entry = row.entry,
                            row.localVersion != nil
                        else { continue }
                        // The damaged version stays readable until the repaired one replaces it; a
                        // newer version on the server replaces it as an update does (checking what it reuses).
                        let repair = entry.version == row.localVersion
                        log(
                            "asset pack \(pack) of \(name): damaged; \(repair ? "assembling version \(entry.version) again" : "updating to version \(entry.version)")"
                        )
                        stopJob(Key(app: name, pack: pack))
                        row.target = entry
                        save(row)
                        startJob(Key(app: name, pack: pack), app: app, entry: entry, essential: true, repair: repair)
                    }
                }
                reply(.packs(PackReport(packs: listing(app: name), problems: problems)))
            }
        }
    }

    // MARK: Listing

    /// Where each pack of `app` (nil: every app) stands.
    func listing(app: String?) -> [PackInfo] {
        let rows: [PackRow]
        do { rows = try self.rows(app: app) } catch {
            log("cannot list the asset packs: \(error)")
            return []
        }
        let groups = Dictionary(
            ((try? store.apps()) ?? []).map { ($0.bundleIdentifier, $0.appGroupIdentifier) },
            uniquingKeysWith: { first, _ in first })
        return rows.map { row in
            let entry = row.entry
            var info = PackInfo(appIdentifier: row.appIdentifier, assetPackID: row.packID, status: [])
            info.policy = entry.map { Self.policy($0.downloadPolicy) }
            info.localVersion = row.localVersion
            info.serverVersion = entry?.version
            info.downloadSize = entry?.downloadSize
            info.userInfo = entry?.userInfo.flatMap(Self.userInfoText)
            info.language = entry?.canonicalLanguage ?? entry?.language
            info.error = row.failure
            info.errorCode = row.failureCode
            if row.declined, row.localVersion == nil, !row.requested { info.declined = true }
            if row.localVersion != nil, let group = groups[row.appIdentifier] ?? nil {
                info.path = containers.packPath(group: group, app: row.appIdentifier, id: row.packID)
            }
            var status: PackStatus = []
            let job = jobs[Key(app: row.appIdentifier, pack: row.packID)]
            if let local = row.localVersion {
                status.insert(.downloaded)
                if entry == nil {
                    status.insert(.obsolete)
                } else {
                    status.insert(local == entry?.version ? .upToDate : .outOfDate)
                }
            } else if entry != nil {
                status.insert(.downloadAvailable)
            }
            if let job {
                status.insert(.downloading)
                info.targetVersion = job.entry.version
                // Once the index is checked, the size it needs (never more than the manifest's).
                if let index = job.index { info.downloadSize = index.downloadSize }
                info.bytesPresent = job.bytesPresent
                info.bytesTotal = job.bytesTotal
                info.bytesFetched = job.bytesFetched
                info.bytesToFetch = job.bytesToFetch
                info.bytesReused = job.bytesReused
                info.waitingFor = job.waitingFor ?? networkWait(job)
                if info.waitingFor == nil, let wait = transfers.serverWait(of: job.entry.indexURL) {
                    // Its server gives no answer: it goes on at the server's first answer.
                    info.waitingFor = .server
                    info.waitingError = wait.reason
                    info.nextAttemptAt = wait.nextAttemptAt.timeIntervalSince1970
                }
                // Its files queue with background downloads (not through the window: no place).
                if info.waitingFor == nil, !job.essential, transfers.fetchesWaitInQueue(job.fetchesInFlight) {
                    info.waitingFor = .queue
                }
                // Named by its policy: an on-demand or prefetch pack fetched at once is requested,
                // not essential.
                if job.essential {
                    if Self.policy(job.entry.downloadPolicy) == .essential {
                        info.essential = true
                    } else {
                        info.requested = true
                    }
                }
            } else if row.failure != nil {
                status.insert(.failed)
            }
            info.status = status
            fillSizes(&info, row: row, job: job)
            return info
        }
    }

    /// Apps with packs whose last manifest check failed, with why (and the error code, in the
    /// text: `(error 1106)`), and apps whose signing key an update removed.
    func checkErrors(app: String?) -> [String: String] {
        let apps: [StoredPackApp]
        do { apps = try store.packApps() } catch { return [app ?? "basd": "cannot read the apps with packs: \(error)"] }
        var errors: [String: String] = [:]
        for record in apps where app == nil || record.appIdentifier == app {
            if let error = record.checkError {
                errors[record.appIdentifier] = error + (record.checkErrorCode.map { " (error \($0))" } ?? "")
            }
        }
        return errors
    }

    /// What holds background transfers changed (Low Power Mode, a metered network, restricted
    /// connectivity): each pack download held (not essential) says so, with a `paused` event
    /// (`waitingFor` the reason) or a `began` one (going on).
    func backgroundHoldChanged(_ reason: NetworkConditions.Hold?) {
        for job in jobs.values where !job.essential && job.waitingFor == nil {
            send(
                PackEvent(
                    reason.map { .paused(WaitingReason($0)) } ?? afterBackgroundHold(job), appIdentifier: job.key.app,
                    assetPackID: job.key.pack, version: job.entry.version))
        }
    }

    /// Whether `app` gets packs.
    func hasPacks(_ app: String) -> Bool {
        (try? store.packApps())?.contains { $0.appIdentifier == app } ?? false
    }

    // MARK: Helpers

    /// Whether the pack being installed for `app` is essential (installed with the app).
    func isEssentialJob(app: String, pack: String) -> Bool { jobs[Key(app: app, pack: pack)]?.essential ?? false }

    /// Sends `event`, with the download size and `userInfo` of the version being installed.
    func send(_ event: PackEvent) {
        var event = event
        if let job = jobs[Key(app: event.appIdentifier, pack: event.assetPackID)], job.entry.version == event.version {
            // The manifest's figure is checked for range only: the app is told a size once the
            // index (which must need no more) agrees.
            event.downloadSize = job.index?.downloadSize
            event.userInfo = job.entry.userInfo.flatMap(Self.userInfoText)
        }
        delegate?.packs(self, sent: event)
        if !selfHosted.isEmpty { reportSelfHosted(event) }
    }

    /// The manifest's `userInfo` as JSON text.
    static func userInfoText(_ value: JSONValue) -> String? {
        (try? JSONEncoder().encode(value)).map { String(decoding: $0, as: UTF8.self) }
    }

    func fetchDirectory(app: String) -> String { containers.packRoot(app: app) + "/.fetch" }

    /// Where the index of a local (or staged) version is kept.
    func indexPath(app: String, pack: String, version: Int) -> String {
        containers.packRoot(app: app) + "/indexes/\(pack)/\(version).json"
    }

    static func makeDirectories(_ path: String) throws {
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    static func policy(_ policy: PackManifest.DownloadPolicy) -> PackPolicy {
        switch policy {
        case .essential: .essential
        case .prefetch: .prefetch
        case .onDemand: .onDemand
        }
    }
}
