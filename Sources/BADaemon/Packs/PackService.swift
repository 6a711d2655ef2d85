import BACore
import BADaemonProtocol
import BADownloadEngine
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
    /// Whether every one of the pack fetches `ids` in flight waits for the engine's background
    /// concurrency (none started): the pack says it waits in the queue.
    func fetchesWaitInQueue(_ ids: some Collection<String>) -> Bool
}

extension TransferCoordinator: PackTransfers {
    var backgroundHold: NetworkConditions.Hold? { window.backgroundHeld ? backgroundHoldReason : nil }
}

/// Who hears what happens to packs (``BasdServices``, which hands the events to the CLI observers).
protocol PackServiceDelegate: AnyObject {
    func packs(_ service: PackService, sent event: PackEvent)

    /// Asks `app`'s extension (`shouldDownload(_:)`) about `packs`, once, in one call; `decided`
    /// gets the IDs it declined, on the executor: none when it cannot be asked or the call fails.
    func packs(
        _ service: PackService, askExtensionOf app: StoredApp, about packs: [AssetPackRecord],
        decided: @escaping (_ declined: Set<String>) -> Void)
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
    /// Manifest checks in flight, by app: everyone waiting for it.
    var checks: [String: [@Sendable (String?) -> Void]] = [:]
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

    // MARK: Apps

    /// `app` was installed or updated (or re-registered): records whether it gets packs and, if it
    /// does, reads its manifest and starts what `event` calls for. `done` gets nil, or why the
    /// manifest could not be used (the install reports it; essential packs cannot come).
    func appInstalled(
        _ app: StoredApp, hasPacks: Bool, publicKey: [UInt8]?, event: PackManifest.InstallationEvent,
        done: @escaping @Sendable (String?) -> Void
    ) {
        do {
            let existing = try store.packApps().first { $0.appIdentifier == app.bundleIdentifier }
            let optedIn = existing?.optedInByUse == true && app.manifestURL != nil
            guard hasPacks || optedIn else {
                if existing != nil {
                    log("\(app.bundleIdentifier) no longer declares BAHasManagedAssetPacks: its packs are removed")
                    uninstall(app.bundleIdentifier)
                }
                done(nil)
                return
            }
            try store.setPackApp(
                StoredPackApp(
                    appIdentifier: app.bundleIdentifier,
                    publicKey: publicKey.map { Data($0).base64EncodedString() }, optedInByUse: !hasPacks))
        } catch {
            done("basd could not record the app's asset packs: \(error)")
            return
        }
        check(app, trigger: .installation(event), done: done)
    }

    /// `app` used `AssetPackManager` without declaring `BAHasManagedAssetPacks`: as Apple's first
    /// use of the manager does, that opts it into managed packs (if it has a `BAManifestURL`):
    /// recorded, so that its updates keep them, and its manifest read with the first
    /// installation's policies. `done` gets nil, or why that could not be done.
    func optIn(_ app: StoredApp, publicKey: [UInt8]?, done: @escaping @Sendable (String?) -> Void) {
        guard !hasPacks(app.bundleIdentifier), app.manifestURL != nil else {
            done(nil)
            return
        }
        do {
            try store.setPackApp(
                StoredPackApp(
                    appIdentifier: app.bundleIdentifier, publicKey: publicKey.map { Data($0).base64EncodedString() },
                    optedInByUse: true))
        } catch {
            done("basd could not record the app's asset packs: \(error)")
            return
        }
        log("\(app.bundleIdentifier) opted into managed asset packs by using AssetPackManager")
        check(app, trigger: .installation(.firstInstallation)) { [self] failure in
            guard let failure else { return done(nil) }
            // Its BAManifestURL is not a download manifest of packs (an extension's own, say): no
            // opt-in, so that its updates and periodic runs do not fail on packs it never had.
            executor.async { [self] in
                log("\(app.bundleIdentifier) does not get managed asset packs after all: \(failure)")
                uninstall(app.bundleIdentifier)
                done(failure)
            }
        }
    }

    /// Resumes what a previous basd left: each pack being assembled goes on from what is verified
    /// in its staging folder, each row learns the version its link really points at, and versions
    /// no longer current go once nothing holds them. Call once at start.
    func resume() {
        let rows: [StoredPack]
        do {
            rows = try store.packs()
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
                if let target = row.target.flatMap(Self.decodeEntry), target.version == linked { row.target = nil }
                save(row)
            }
            for version in (try? PackInstallation.versions(root: root, id: row.packID)) ?? [] where version != linked {
                removeWhenFree(key, version: version)
            }
            if let target = row.target.flatMap(Self.decodeEntry), let app = try? store.app(row.appIdentifier) {
                log("asset pack \(key): resuming version \(target.version)")
                // The local version as the target: a repair that was under way.
                startJob(key, app: app, entry: target, essential: false, repair: target.version == linked)
            }
        }
    }

    // MARK: Manifest checks

    /// Reads `app`'s download manifest, records what it lists, and acts on each pack as `trigger`
    /// calls for (``PackDecision``). Concurrent checks of one app share one fetch.
    func check(_ app: StoredApp, trigger: PackDecision.Trigger, done: @escaping @Sendable (String?) -> Void) {
        let name = app.bundleIdentifier
        if checks[name] != nil {
            checks[name]?.append { [self] failure in
                guard failure == nil else { return done(failure) }
                // The manifest is fresh: decide again for this trigger.
                askExtension(trigger, app: app) { [self] in
                    apply(trigger, to: app)
                    done(nil)
                }
            }
            return
        }
        checks[name] = [done]
        guard let url = app.manifestURL else {
            finishCheck(
                name, failure: "\(name) has no BAManifestURL: add the URL of its download manifest to its Info.plist")
            return
        }
        let key = (try? store.packApps())?.first { $0.appIdentifier == name }?.publicKey.flatMap {
            Data(base64Encoded: $0).map(Array.init)
        }
        let directory = fetchDirectory(app: name)
        do { try Self.makeDirectories(directory) } catch {
            finishCheck(name, failure: "cannot create \(directory): \(error)")
            return
        }
        fetchSequence += 1
        let manifestPath = directory + "/manifest-\(fetchSequence).json"
        transfers.fetchPackFile(
            .init(
                id: "\(name)/manifest/\(fetchSequence)", url: url, destination: manifestPath,
                byteLimit: 16 << 20, essential: true), for: app
        ) { [self] result in
            switch result {
            case .failure(let failure):
                finishCheck(name, failure: "cannot fetch the download manifest \(url): \(failure.message)")
            case .success(let path):
                guard let key else {
                    readManifest(app, path: path, signature: nil, publicKey: nil, trigger: trigger)
                    return
                }
                fetchSequence += 1
                let signaturePath = directory + "/manifest-\(fetchSequence).json.sig"
                transfers.fetchPackFile(
                    .init(
                        id: "\(name)/signature/\(fetchSequence)", url: url + ".sig", destination: signaturePath,
                        byteLimit: 4096, essential: true), for: app
                ) { [self] result in
                    switch result {
                    case .failure(let failure):
                        unlink(path)
                        finishCheck(
                            name,
                            failure:
                                "the download manifest is not signed, and BAAssetPackPublicKey requires it: \(url).sig: \(failure.message); sign it with `ba pack publish --key`"
                        )
                    case .success(let signature):
                        readManifest(app, path: path, signature: signature, publicKey: key, trigger: trigger)
                    }
                }
            }
        }
    }

    private func readManifest(
        _ app: StoredApp, path: String, signature: String?, publicKey: [UInt8]?, trigger: PackDecision.Trigger
    ) {
        let name = app.bundleIdentifier
        defer {
            unlink(path)
            if let signature { unlink(signature) }
        }
        let bytes: [UInt8]
        do { bytes = try RegularFile.read(path, limit: 16 << 20) } catch {
            finishCheck(name, failure: "cannot read the fetched manifest: \(error)")
            return
        }
        if let signature, let publicKey {
            let text = (try? RegularFile.read(signature, limit: 4096)).map { String(decoding: $0, as: UTF8.self) } ?? ""
            let decoded = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)).map(Array.init)
            guard let decoded, PackSigning.verify(bytes, signature: decoded, publicKey: publicKey) else {
                finishCheck(
                    name,
                    failure:
                        "the download manifest's signature does not match BAAssetPackPublicKey: refused (was it signed with another key, or changed after signing?)"
                )
                return
            }
        }
        let manifest: PackPublisher.DownloadManifest
        do {
            manifest = try JSONDecoder().decode(PackPublisher.DownloadManifest.self, from: Data(bytes))
        } catch {
            finishCheck(name, failure: "the download manifest is not one `ba pack publish` writes: \(error)")
            return
        }
        guard manifest.formatVersion == 1 else {
            finishCheck(
                name, failure: "the download manifest has format version \(manifest.formatVersion); this basd reads 1")
            return
        }
        for entry in manifest.assetPacks where !PackManifest.isValidID(entry.assetPackID) || entry.version < 0 {
            finishCheck(name, failure: "the download manifest lists an invalid pack \"\(entry.assetPackID)\"")
            return
        }
        do {
            var rows = Dictionary(
                try store.packs(app: name).map { ($0.packID, $0) }, uniquingKeysWith: { first, _ in first })
            for entry in manifest.assetPacks {
                var row = rows[entry.assetPackID] ?? StoredPack(appIdentifier: name, packID: entry.assetPackID)
                row.entry = Self.encode(entry)
                rows[entry.assetPackID] = row
                try store.savePack(row)
            }
            let listed = Set(manifest.assetPacks.map(\.assetPackID))
            for (id, var row) in rows where !listed.contains(id) && row.entry != nil {
                row.entry = nil
                try store.savePack(row)
            }
            let optedIn = try store.packApps().first { $0.appIdentifier == name }?.optedInByUse ?? false
            try store.setPackApp(
                StoredPackApp(
                    appIdentifier: name, publicKey: publicKey.map { Data($0).base64EncodedString() },
                    checkedAt: clock.now, checkError: nil, optedInByUse: optedIn))
        } catch {
            finishCheck(name, failure: "basd could not record the download manifest: \(error)")
            return
        }
        // A folder of the app's where its packs' link goes fails the check (and `ba install`): it says what to move.
        if let group = app.appGroupIdentifier, let failure = linkNamespace(group: group) {
            finishCheck(name, failure: failure)
            return
        }
        askExtension(trigger, app: app) { [self] in
            apply(trigger, to: app)
            finishCheck(name, failure: nil)
        }
    }

    private func finishCheck(_ app: String, failure: String?) {
        if let failure {
            log("asset packs of \(app): \(failure)")
            if var record = (try? store.packApps())?.first(where: { $0.appIdentifier == app }) {
                record.checkError = failure
                record.checkedAt = clock.now
                try? store.setPackApp(record)
            }
        }
        let waiting = checks.removeValue(forKey: app) ?? []
        for done in waiting { done(failure) }
    }

    /// Acts on every pack of `app` as `trigger` calls for.
    func apply(_ trigger: PackDecision.Trigger, to app: StoredApp) {
        guard let rows = try? store.packs(app: app.bundleIdentifier) else { return }
        for row in rows { act(on: row, app: app, trigger: trigger) }
    }

    @discardableResult
    func act(on row: StoredPack, app: StoredApp, trigger: PackDecision.Trigger) -> PackDecision.Action {
        let key = Key(app: row.appIdentifier, pack: row.packID)
        let entry = row.entry.flatMap(Self.decodeEntry)
        let action = PackDecision.action(
            policy: entry?.downloadPolicy, serverVersion: entry?.version, localVersion: row.localVersion,
            requested: row.requested, trigger: trigger, declined: row.declined)
        switch action {
        case .none:
            break
        case .download(let essential):
            guard let entry else { break }
            if let job = jobs[key] {
                // Already on its way: an essential wait only makes it more urgent.
                if job.entry.version == entry.version {
                    if essential { job.essential = true }
                    break
                }
                stopJob(key)
            }
            var row = row
            row.target = Self.encode(entry)
            row.failure = nil
            save(row)
            startJob(key, app: app, entry: entry, essential: essential)
        case .removeObsolete:
            guard let local = row.localVersion else { break }
            stopJob(key)
            log("asset pack \(key) is obsolete (no longer in the manifest): version \(local) is removed")
            removePack(key, row: row, forget: true)
            send(PackEvent(kind: "obsolete", appIdentifier: key.app, assetPackID: key.pack, version: local))
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
        guard let app = try? store.app(name) else {
            reply(Refusal(.invalidRequest, "app \(name) is not registered with basd").result)
            return
        }
        let perform: @Sendable () -> ServerMessage.Result = { [self] in
            guard var row = (try? store.packs(app: name))?.first(where: { $0.packID == pack }), row.entry != nil else {
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
        let known = (try? store.packs(app: name))?.contains { $0.packID == pack && $0.entry != nil } ?? false
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
                    reply(Refusal(.invalidRequest, failure).result)
                } else {
                    reply(perform())
                }
            }
        }
    }

    /// An app cancelled a pack's download (its `Progress`): the job stops (what is verified in
    /// staging stays), the request is forgotten, and a `failed` event says so.
    func cancel(app name: String, pack: String) -> ServerMessage.Result {
        guard var row = (try? store.packs(app: name))?.first(where: { $0.packID == pack }) else {
            return Refusal(.invalidRequest, "\(name) has no asset pack \"\(pack)\"").result
        }
        let key = Key(app: name, pack: pack)
        if let job = jobs[key] {
            let version = job.entry.version
            stopJob(key)
            log("asset pack \(key): the app cancelled the download of version \(version)")
            var event = PackEvent(kind: "failed", appIdentifier: name, assetPackID: pack, version: version)
            event.message = "cancelled"
            send(event)
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
        guard let rows = try? store.packs(app: name) else {
            reply(Refusal(.internalError, "basd could not read its asset packs").result)
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
                        guard var row = (try? store.packs(app: name))?.first(where: { $0.packID == pack }),
                            let entry = row.entry.flatMap(Self.decodeEntry), row.localVersion != nil
                        else { continue }
                        // The damaged version stays readable until the repaired one replaces it; a
                        // newer version on the server replaces it as an update does (checking what it reuses).
                        let repair = entry.version == row.localVersion
                        log(
                            "asset pack \(pack) of \(name): damaged; \(repair ? "assembling version \(entry.version) again" : "updating to version \(entry.version)")"
                        )
                        stopJob(Key(app: name, pack: pack))
                        row.target = Self.encode(entry)
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
        guard let rows = try? store.packs(app: app) else { return [] }
        let groups = Dictionary(
            ((try? store.apps()) ?? []).map { ($0.bundleIdentifier, $0.appGroupIdentifier) },
            uniquingKeysWith: { first, _ in first })
        return rows.map { row in
            let entry = row.entry.flatMap(Self.decodeEntry)
            var info = PackInfo(appIdentifier: row.appIdentifier, assetPackID: row.packID, status: "")
            info.policy = entry.map { Self.policyName($0.downloadPolicy) }
            info.localVersion = row.localVersion
            info.serverVersion = entry?.version
            info.downloadSize = entry?.downloadSize
            info.userInfo = entry?.userInfo.flatMap(Self.userInfoText)
            info.error = row.failure
            if row.declined, row.localVersion == nil, !row.requested { info.declined = true }
            if row.localVersion != nil, let group = groups[row.appIdentifier] ?? nil {
                info.path = containers.packPath(group: group, app: row.appIdentifier, id: row.packID)
            }
            var words: [String] = []
            let job = jobs[Key(app: row.appIdentifier, pack: row.packID)]
            if let local = row.localVersion {
                words.append("downloaded")
                if entry == nil {
                    words.append("obsolete")
                } else {
                    words.append(local == entry?.version ? "upToDate" : "outOfDate")
                }
            } else if entry != nil {
                words.append("downloadAvailable")
            }
            if let job {
                words.append("downloading")
                info.targetVersion = job.entry.version
                info.bytesPresent = job.bytesPresent
                info.bytesTotal = job.bytesTotal
                info.bytesFetched = job.bytesFetched
                info.bytesToFetch = job.bytesToFetch
                info.bytesReused = job.bytesReused
                info.waitingFor = job.waitingFor ?? (!job.essential ? transfers.backgroundHold?.rawValue : nil)
                // Its files queue with background downloads (not through the window: no place).
                if info.waitingFor == nil, !job.essential, transfers.fetchesWaitInQueue(job.inFlight.values) {
                    info.waitingFor = "queue"
                }
                info.essential = job.essential
            } else if row.failure != nil {
                words.append("failed")
            }
            info.status = words.joined(separator: ",")
            return info
        }
    }

    /// Apps with packs whose last manifest check failed, with why.
    func checkErrors(app: String?) -> [String: String] {
        let apps = (try? store.packApps()) ?? []
        var errors: [String: String] = [:]
        for record in apps where app == nil || record.appIdentifier == app {
            if let error = record.checkError { errors[record.appIdentifier] = error }
        }
        return errors
    }

    /// What holds background transfers changed (Low Power Mode, a metered network, restricted
    /// connectivity): each pack download held (not essential) says so, with a `paused` event
    /// (`waitingFor` the reason) or a `began` one (going on).
    func backgroundHoldChanged(_ reason: NetworkConditions.Hold?) {
        for job in jobs.values where !job.essential && job.waitingFor == nil {
            var event = PackEvent(
                kind: reason != nil ? "paused" : "began", appIdentifier: job.key.app, assetPackID: job.key.pack,
                version: job.entry.version)
            event.waitingFor = reason?.rawValue
            send(event)
        }
    }

    /// The essential packs of `event` for `app` that its extension did not decline, by ID.
    func essentialPacks(app: String, event: PackManifest.InstallationEvent) -> [String] {
        ((try? store.packs(app: app)) ?? []).compactMap { row in
            guard !row.declined, case .essential(let events)? = row.entry.flatMap(Self.decodeEntry)?.downloadPolicy,
                events.contains(event)
            else { return nil }
            return row.packID
        }.sorted()
    }

    /// Whether `app` gets packs.
    func hasPacks(_ app: String) -> Bool {
        (try? store.packApps())?.contains { $0.appIdentifier == app } ?? false
    }

    // MARK: Helpers

    func save(_ row: StoredPack) {
        do { try store.savePack(row) } catch { log("asset pack \(row.packID) of \(row.appIdentifier): \(error)") }
    }

    /// Whether the pack being installed for `app` is essential (installed with the app).
    func isEssentialJob(app: String, pack: String) -> Bool { jobs[Key(app: app, pack: pack)]?.essential ?? false }

    /// Sends `event`, with the download size and `userInfo` of the version being installed.
    func send(_ event: PackEvent) {
        var event = event
        if let job = jobs[Key(app: event.appIdentifier, pack: event.assetPackID)], job.entry.version == event.version {
            event.downloadSize = job.entry.downloadSize
            event.userInfo = job.entry.userInfo.flatMap(Self.userInfoText)
        }
        delegate?.packs(self, sent: event)
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

    static func encode(_ entry: Entry) -> String? {
        (try? JSONEncoder().encode(entry)).map { String(decoding: $0, as: UTF8.self) }
    }

    static func decodeEntry(_ text: String) -> Entry? {
        try? JSONDecoder().decode(Entry.self, from: Data(text.utf8))
    }

    static func policyName(_ policy: PackManifest.DownloadPolicy) -> String {
        switch policy {
        case .essential: "essential"
        case .prefetch: "prefetch"
        case .onDemand: "onDemand"
        }
    }

    /// Removes a version that is no longer current (or, `replaced`, the damaged copy a repair
    /// swapped out) once no process holds a file in it.
    func removeWhenFree(_ key: Key, version: Int, replaced: Bool = false) {
        let root = containers.packRoot(app: key.app)
        io.async { [self] in
            let directory =
                root + "/" + PackInstallation.packsFolder(id: key.pack) + "/\(version)" + (replaced ? ".replaced" : "")
            guard FileManager.default.fileExists(atPath: directory) else { return }
            // That version may be current again (assembled anew since): it stays.
            if !replaced, (try? PackInstallation.current(root: root, id: key.pack)) == version { return }
            let holders = PackInstallation.holders(of: directory)
            if holders.isEmpty {
                do throws(PackError) {
                    if replaced {
                        try PackInstallation.removeReplaced(root: root, id: key.pack, version: version)
                    } else {
                        try PackInstallation.remove(root: root, id: key.pack, version: version)
                    }
                    log("asset pack \(key): removed \(replaced ? "the old copy of " : "")version \(version)")
                } catch {
                    log("asset pack \(key): cannot remove version \(version): \(error)")
                }
                return
            }
            executor.async { [self] in
                guard replaced || (try? PackInstallation.current(root: root, id: key.pack)) != version else { return }
                let held = HeldVersion(key: key, version: version, replaced: replaced)
                if heldVersions.insert(held).inserted {
                    log(
                        "asset pack \(key): version \(version) stays while process(es) \(holders.map(String.init).joined(separator: ", ")) hold it"
                    )
                }
                armHeldTimer()
            }
        }
    }

    private func armHeldTimer() {
        guard !heldTimerArmed, !heldVersions.isEmpty else { return }
        heldTimerArmed = true
        executor.after(retryInterval * 5) { [self] in
            heldTimerArmed = false
            let held = heldVersions
            heldVersions = []
            for version in held { removeWhenFree(version.key, version: version.version, replaced: version.replaced) }
        }
    }
}
