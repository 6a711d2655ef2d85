import BACore
import BADaemonProtocol
import BAExclusiveControl
import BAStore
import Foundation

/// Request routing: decodes what a connection asks, checks who may ask it, calls the service
/// that owns the answer and replies. It keeps no state of its own.
///
/// It is the top layer: given in its `init` every service it routes to, and no service calls it.
final class RequestRouter: @unchecked Sendable {
    let store: BAStore
    /// Where app group containers are (a hello prepares the app's; a lock's status is read there).
    let containers: AppContainers
    /// basd's configuration (its version, in a welcome).
    let configuration: BasdServices.Configuration
    /// The executor every method runs on (a listing's pages are posted to it).
    let executor: ServiceExecutor
    let transfers: TransferCoordinator
    let delivery: EventRouter
    let installer: AppInstaller
    let scheduler: PeriodicScheduler
    let purge: PurgeService
    let packs: PackService
    /// Returns free heap memory to the kernel soon (after a long listing).
    let releaseMemorySoon: @Sendable () -> Void
    let log: @Sendable (String) -> Void

    /// A router that answers with the services it is given.
    init(
        store: BAStore, containers: AppContainers, configuration: BasdServices.Configuration,
        executor: ServiceExecutor, transfers: TransferCoordinator, delivery: EventRouter, installer: AppInstaller,
        scheduler: PeriodicScheduler, purge: PurgeService, packs: PackService,
        releaseMemorySoon: @escaping @Sendable () -> Void,
        log: @escaping @Sendable (String) -> Void
    ) {
        self.store = store
        self.containers = containers
        self.configuration = configuration
        self.executor = executor
        self.transfers = transfers
        self.delivery = delivery
        self.installer = installer
        self.scheduler = scheduler
        self.purge = purge
        self.packs = packs
        self.releaseMemorySoon = releaseMemorySoon
        self.log = log
    }

    /// How many downloads a listing's page reads and encodes (one turn of the executor each),
    /// learned across listings (``TurnSize``).
    var listingPage = TurnSize(range: 50...5_000, start: 500)

    /// Accepts or refuses a `hello` (executor).
    func greet(_ client: ClientInfo, protocolVersion: Int) -> Result<WelcomeInfo, Refusal> {
        var welcome = WelcomeInfo(protocolVersion: protocolVersion, daemonVersion: configuration.daemonVersion)
        guard client.role != .cli else { return .success(welcome) }
        guard let bundleIdentifier = client.bundleIdentifier, !bundleIdentifier.isEmpty else {
            return .failure(
                Refusal(
                    .callerConnectionNotAccepted, "an \(client.role.rawValue) client must name its bundle identifier"))
        }
        // The rules of a registration: a NUL would be cut where SQLite reads the text, and the
        // rest would name another app.
        if let violation = DownloadRules.checkFolderName(bundleIdentifier, what: "bundle identifier") {
            return .failure(Refusal(.callerConnectionNotAccepted, "\(violation.reason); hello refused"))
        }
        do {
            guard let app = try store.app(bundleIdentifier) else {
                return .failure(
                    Refusal(
                        .callerConnectionNotAccepted,
                        "app \(bundleIdentifier) is not registered with basd; install it first (ba install APP_DIR)"))
            }
            if client.role == .app {
                if try store.markLaunched(app: bundleIdentifier) {
                    log("\(bundleIdentifier) launched for the first time")
                    transfers.liftRestrictions(of: bundleIdentifier)
                }
                scheduler.recordLaunch(of: bundleIdentifier)
            }
            welcome.bundleIdentifier = bundleIdentifier
            if let group = app.appGroupIdentifier {
                welcome.appGroupIdentifier = group
                welcome.appGroupContainer = try containers.prepare(group: group)
            }
            return .success(welcome)
        } catch let error as BAStoreError {
            return .failure(Refusal(error))
        } catch {
            return .failure(Refusal(.internalError, "cannot prepare the app group container: \(error)"))
        }
    }

    /// Serves one request after the handshake (executor): its answer, or nil when the
    /// request answers later through `reply` (called on the service queue).
    func serve(
        _ request: Request, from client: ClientInfo, session: Session,
        reply: @escaping @Sendable (ServerMessage.Result) -> Void, page: @escaping PageSender
    ) -> ServerMessage.Result? {
        do {
            switch request {
            case .listDownloads(let app, let states, let limit):
                try require(.cli, client, request)
                try listDownloads(app: app, states: states, limit: limit, reply: reply, page: page)
                return nil
            case .currentDownloads:
                // `fetchCurrentDownloads`: the app's active downloads, paged from the store as a
                // listing is (100,000 queued are never one answer in memory).
                let app = try appOf(client, request)
                streamDownloads(
                    DownloadFilter(appIdentifier: app.bundleIdentifier, states: [.created, .waiting, .downloading]),
                    reply: reply, page: page)
                return nil
            case .installApp(let install):
                try require(.cli, client, request)
                installer.install(install, reply: reply)
                return nil
            case .simulate(let app, let event):
                try require(.cli, client, request)
                try installer.simulate(event, app: app, reply: reply)
                return nil
            case .uninstallApp(let app, let keepData):
                try require(.cli, client, request)
                installer.uninstall(app, keepData: keepData, why: "ba uninstall", reply: reply)
                return nil
            case .packs(var command):
                if client.role == .probe, command.action != .list, command.action != .follow {
                    throw Refusal(
                        .callerConnectionInvalid,
                        "a probe may list and follow packs; `packs \(command.action.rawValue)` needs an app connection")
                }
                if client.role != .cli {
                    // An app (AssetPackManager) acts on its own packs only.
                    command.app = try appOf(client, request).bundleIdentifier
                    guard command.action != .verify else {
                        throw Refusal(.callerConnectionInvalid, "`packs verify` is for ba (ba packs verify)")
                    }
                    // Where an app's packs come from is the user's to change, never the app's.
                    guard command.action != .override else {
                        throw Refusal(.callerConnectionInvalid, "`packs override` is for ba (ba packs override)")
                    }
                }
                servePacks(command, from: client, session: session, reply: reply)
                return nil
            case .purge(let dryRun):
                // Walks the containers off the executor: answered later.
                try require(.cli, client, request)
                purge.purge(dryRun: dryRun) { outcome in
                    switch outcome {
                    case .success(let report): reply(.purge(report))
                    case .failure(let refusal): reply(refusal.result)
                    }
                }
                return nil
            default:
                break
            }
            guard client.role != .probe else {
                throw Refusal(
                    .callerConnectionInvalid,
                    "\"\(request.type)\" needs an app connection; a probe may list and follow packs")
            }
            return try perform(request, from: client, session: session)
        } catch let refusal as Refusal {
            return refusal.result
        } catch let error as BAStoreError {
            return Refusal(error).result
        } catch {
            return Refusal(.internalError, "\(request.type) failed: \(error)").result
        }
    }

    private func perform(_ request: Request, from client: ClientInfo, session: Session) throws -> ServerMessage.Result {
        switch request {
        case .hello, .status:
            // The connection state machine answers these itself.
            throw Refusal(.callerConnectionInvalid, "\(request.type) is not a service request")
        case .registerApp(let registration):
            try require(.cli, client, request)
            return try register(registration)
        case .schedule(let payload):
            let app = try appOf(client, request)
            return .downloads([
                transfers.info(try transfers.schedule(payload, for: app, contentRequest: 0))
            ])
        case .startForeground(let identifier):
            let app = try appOf(client, request)
            guard client.role == .app else {
                throw Refusal(
                    AppleErrorCode.callFromExtensionNotAllowed.rawValue,
                    "startForegroundDownload is only available to the app, not to its extension")
            }
            try transfers.promote(try activeDownload(app: app.bundleIdentifier, identifier: identifier))
            return .ok
        case .cancel(let identifier):
            let app = try appOf(client, request)
            try transfers.cancel(app: app.bundleIdentifier, identifier: identifier)
            return .ok
        case .currentDownloads:
            throw Refusal(.internalError, "currentDownloads is answered page by page")
        case .subscribeEvents:
            delivery.subscribe(session, client: client)
            return .ok
        case .acknowledgeEvents(let sequence):
            let app = try appOf(client, request)
            try delivery.acknowledge(app: app.bundleIdentifier, through: sequence)
            return .ok
        case .respondToChallenge(let uniqueIdentifier, let disposition, let user, let password):
            let app = try appOf(client, request)
            guard let download = try store.download(uniqueIdentifier: uniqueIdentifier),
                download.appIdentifier == app.bundleIdentifier
            else {
                throw Refusal(
                    AppleErrorCode.downloadNotScheduled.rawValue, "no download \(uniqueIdentifier) of this app")
            }
            transfers.respond(to: uniqueIdentifier, disposition: disposition, user: user, password: password)
            return .ok
        case .promoteDownload(let uniqueIdentifier):
            try require(.cli, client, request)
            try transfers.promote(try activeDownload(uniqueIdentifier: uniqueIdentifier))
            return .ok
        case .retryDownload(let uniqueIdentifier):
            try require(.cli, client, request)
            try transfers.retry(uniqueIdentifier)
            return .ok
        case .cancelDownload(let uniqueIdentifier):
            try require(.cli, client, request)
            let download = try activeDownload(uniqueIdentifier: uniqueIdentifier)
            try transfers.cancel(app: download.appIdentifier, identifier: download.identifier, by: "ba cancel")
            return .ok
        case .lockStatus(let bundleIdentifier):
            try require(.cli, client, request)
            return .lock(try lockStatus(app: bundleIdentifier))
        case .installApp, .simulate, .uninstallApp, .listDownloads, .purge, .packs:
            throw Refusal(.internalError, "\(request.type) is answered later")
        case .listApps:
            try require(.cli, client, request)
            return .apps(try scheduler.appInfos())
        case .clearQuarantine(let bundleIdentifier):
            try require(.cli, client, request)
            try scheduler.clearQuarantine(app: bundleIdentifier)
            return .ok
        }
    }

    // MARK: - Who may ask

    func require(_ role: ClientInfo.Role, _ client: ClientInfo, _ request: Request) throws {
        guard client.role == role else {
            throw Refusal(
                .callerConnectionInvalid,
                "\"\(request.type)\" is for \(role.rawValue) connections; this connection is \(client.role.rawValue)")
        }
    }

    /// The registered app of an app or extension connection.
    private func appOf(_ client: ClientInfo, _ request: Request) throws -> StoredApp {
        guard client.role != .cli, let bundleIdentifier = client.bundleIdentifier else {
            throw Refusal(
                .callerConnectionInvalid,
                "\"\(request.type)\" is for app connections; the CLI uses the unique-identifier requests")
        }
        guard let app = try store.app(bundleIdentifier) else {
            throw Refusal(.callerConnectionNotAccepted, "app \(bundleIdentifier) is no longer registered")
        }
        return app
    }

    // MARK: - Apps

    /// `registerApp`: registers without reading an `Info.plist` (no manifest, no restrictions).
    private func register(_ registration: AppRegistration) throws -> ServerMessage.Result {
        try installer.register(registration, manifestURL: nil, restrictions: StoredApp.Restrictions())
        return .ok
    }

    private func activeDownload(app: String, identifier: String) throws -> StoredDownload {
        guard
            let download = try store.activeDownloads(app: app).first(where: {
                $0.identifier == identifier && $0.state.isActive
            })
        else {
            throw Refusal(
                AppleErrorCode.downloadNotScheduled.rawValue, "\(app) has no scheduled download \"\(identifier)\"")
        }
        return download
    }

    private func activeDownload(uniqueIdentifier: String) throws -> StoredDownload {
        guard let download = try store.download(uniqueIdentifier: uniqueIdentifier), download.state.isActive else {
            if let cancelled = transfers.recentlyCancelled(uniqueIdentifier) {
                throw Refusal(AppleErrorCode.downloadNotScheduled.rawValue, cancelled)
            }
            throw Refusal(
                AppleErrorCode.downloadNotScheduled.rawValue,
                "no scheduled download has unique identifier \(uniqueIdentifier)")
        }
        return download
    }

    // MARK: - Exclusive control

    private func lockStatus(app bundleIdentifier: String) throws -> LockInfo {
        guard let app = try store.app(bundleIdentifier) else {
            throw Refusal(.callerConnectionNotAccepted, "app \(bundleIdentifier) is not registered with basd")
        }
        guard let group = app.appGroupIdentifier else {
            throw Refusal(AppleErrorCode.downloadInvalid.rawValue, "\(bundleIdentifier) has no app group, so no lock")
        }
        let path = ExclusiveControlLock.path(inContainer: containers.container(group: group))
        let holder = try ExclusiveControlLock.holder(path: path)
        return LockInfo(
            appIdentifier: bundleIdentifier, appGroupIdentifier: group, lockPath: path, held: holder != nil,
            holderPID: holder?.pid)
    }
}
