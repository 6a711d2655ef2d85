import BADaemonProtocol
import BADownloadEngine
import BAExclusiveControl
import BAExtensionProtocol
import BAStore
import Foundation

/// A request refused: the error reply.
struct Refusal: Error {
    var code: Int
    var message: String

    init(_ code: Int, _ message: String) {
        self.code = code
        self.message = message
    }

    init(_ code: DaemonErrorCode, _ message: String) { self.init(code.rawValue, message) }

    var result: ServerMessage.Result { .error(code: code, message: message) }

    /// Apple's codes for the store's refusals; the rest is an internal error.
    init(_ error: BAStoreError) {
        switch error.code {
        case .duplicateIdentifier: self.init(ErrorCodes.downloadAlreadyScheduled, error.message)
        case .notScheduled, .unknownDownload: self.init(ErrorCodes.downloadNotScheduled, error.message)
        case .downloadEnded: self.init(ErrorCodes.downloadNotScheduled, error.message)
        case .unknownApp: self.init(DaemonErrorCode.callerConnectionNotAccepted, error.message)
        case .invalidArgument: self.init(ErrorCodes.downloadInvalid, error.message)
        default: self.init(DaemonErrorCode.internalError, "basd could not use its state: \(error)")
        }
    }
}

/// Apple's `BAErrorCode` raw values that basd replies with (the `BackgroundAssets` module is not
/// linked into basd's protocol layer).
enum ErrorCodes {
    static let downloadInvalid = 0
    static let callFromExtensionNotAllowed = 50
    static let downloadAlreadyScheduled = 100
    static let downloadNotScheduled = 101
    static let downloadEssentialDownloadNotPermitted = 109
    static let downloadBackgroundActivityProhibited = 111
    static let downloadWouldExceedAllowance = 112
    static let sessionDownloadDisallowedByDomain = 202
}

extension DownloadService {
    /// Accepts or refuses a `hello` (service queue).
    func greet(_ client: ClientInfo, protocolVersion: Int) -> Result<WelcomeInfo, Refusal> {
        var welcome = WelcomeInfo(protocolVersion: protocolVersion, daemonVersion: configuration.daemonVersion)
        guard client.role != .cli else { return .success(welcome) }
        guard let bundleIdentifier = client.bundleIdentifier, !bundleIdentifier.isEmpty else {
            return .failure(
                Refusal(.callerConnectionNotAccepted, "an \(client.role.rawValue) client must name its bundle identifier"))
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
                    liftRestrictions(of: bundleIdentifier)
                }
                recordLaunch(of: bundleIdentifier)
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

    /// Serves one request after the handshake (service queue): its answer, or nil when the
    /// request answers later through `reply` (called on the service queue).
    func serve(
        _ request: Request, from client: ClientInfo, session: Session,
        reply: @escaping @Sendable (ServerMessage.Result) -> Void
    ) -> ServerMessage.Result? {
        do {
            switch request {
            case .installApp(let install):
                try require(.cli, client, request)
                self.install(install, reply: reply)
                return nil
            case .simulate(let app, let event):
                try require(.cli, client, request)
                try simulate(event, app: app, reply: reply)
                return nil
            default:
                break
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

    private func perform(_ request: Request, from client: ClientInfo, session: Session) throws -> ServerMessage.Result
    {
        switch request {
        case .hello, .status:
            // The connection state machine answers these itself.
            throw Refusal(.callerConnectionInvalid, "\(request.type) is not a service request")
        case .registerApp(let registration):
            try require(.cli, client, request)
            return try register(registration)
        case .schedule(let payload):
            let app = try appOf(client, request)
            return .downloads([info(try schedule(payload, for: app, contentRequest: 0))])
        case .startForeground(let identifier):
            let app = try appOf(client, request)
            guard client.role == .app else {
                throw Refusal(
                    ErrorCodes.callFromExtensionNotAllowed,
                    "startForegroundDownload is only available to the app, not to its extension")
            }
            try promote(try activeDownload(app: app.bundleIdentifier, identifier: identifier))
            return .ok
        case .cancel(let identifier):
            let app = try appOf(client, request)
            try cancel(app: app.bundleIdentifier, identifier: identifier)
            return .ok
        case .currentDownloads:
            let app = try appOf(client, request)
            return .downloads(try store.downloads(app: app.bundleIdentifier).filter { $0.state.isActive }.map(info))
        case .subscribeEvents:
            subscribe(session, client: client)
            return .ok
        case .acknowledgeEvents(let sequence):
            let app = try appOf(client, request)
            try acknowledge(app: app.bundleIdentifier, through: sequence)
            return .ok
        case .respondToChallenge(let uniqueIdentifier, let disposition, let user, let password):
            let app = try appOf(client, request)
            guard let download = try store.download(uniqueIdentifier: uniqueIdentifier),
                download.appIdentifier == app.bundleIdentifier
            else {
                throw Refusal(ErrorCodes.downloadNotScheduled, "no download \(uniqueIdentifier) of this app")
            }
            respond(to: uniqueIdentifier, disposition: disposition, user: user, password: password)
            return .ok
        case .listDownloads(let app):
            try require(.cli, client, request)
            let apps = try app.map { [$0] } ?? store.apps().map(\.bundleIdentifier)
            return .downloads(try apps.flatMap { try store.downloads(app: $0) }.map(info))
        case .promoteDownload(let uniqueIdentifier):
            try require(.cli, client, request)
            try promote(try activeDownload(uniqueIdentifier: uniqueIdentifier))
            return .ok
        case .cancelDownload(let uniqueIdentifier):
            try require(.cli, client, request)
            let download = try activeDownload(uniqueIdentifier: uniqueIdentifier)
            try cancel(app: download.appIdentifier, identifier: download.identifier)
            return .ok
        case .lockStatus(let bundleIdentifier):
            try require(.cli, client, request)
            return .lock(try lockStatus(app: bundleIdentifier))
        case .installApp, .simulate:
            throw Refusal(.internalError, "\(request.type) is answered later")
        case .listApps:
            try require(.cli, client, request)
            return .apps(try appInfos())
        case .clearQuarantine(let bundleIdentifier):
            try require(.cli, client, request)
            try clearQuarantine(app: bundleIdentifier)
            return .ok
        case .purge(let dryRun):
            try require(.cli, client, request)
            return .purge(try purge(dryRun: dryRun))
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
        try register(registration, manifestURL: nil, restrictions: StoredApp.Restrictions())
        return .ok
    }

    // MARK: - Downloads

    /// Checks, stores (durably) and queues a download of `app`. `contentRequest` as in
    /// `DownloadRules.check`: 0 for an app's own call (no essential downloads), nil from an
    /// extension outside `downloads(for:)`.
    @discardableResult
    func schedule(_ payload: DownloadPayload, for app: StoredApp, contentRequest: Int32?) throws -> StoredDownload {
        guard let appGroup = app.appGroupIdentifier else {
            throw Refusal(
                ErrorCodes.downloadInvalid,
                "\(app.bundleIdentifier) has no app group (BAAppGroupID); finished files are delivered into the app group container"
            )
        }
        let group = payload.applicationGroupIdentifier ?? appGroup
        guard group == appGroup else {
            throw Refusal(
                ErrorCodes.downloadInvalid,
                "download \"\(payload.identifier)\" names app group \"\(group)\", but \(app.bundleIdentifier) belongs to \"\(appGroup)\""
            )
        }
        let uniqueIdentifier = payload.uniqueIdentifier.flatMap { $0.isEmpty ? nil : $0 } ?? UUID().uuidString
        if let violation = DownloadRules.checkIdentifier(uniqueIdentifier, what: "unique identifier") {
            throw Refusal(ErrorCodes.downloadInvalid, violation.reason)
        }
        let record = DownloadRecord(
            identifier: payload.identifier, uniqueIdentifier: uniqueIdentifier, url: payload.url,
            applicationGroupIdentifier: group, fileSize: payload.fileSize ?? 0, priority: payload.priority,
            isEssential: payload.isEssential, headers: payload.headers, sha256: payload.sha256?.lowercased())
        if let violation = DownloadRules.check(record, contentRequest: contentRequest) {
            throw Refusal(violation.code, violation.reason)
        }
        let settings = settingsFile.settings
        if contentRequest != 0, !settings.backgroundActivity {
            throw Refusal(
                ErrorCodes.downloadBackgroundActivityProhibited,
                "background activity is off in basd's settings (backgroundActivity); the app can schedule \"\(record.identifier)\" itself while it runs")
        }
        if record.isEssential, !settings.inAppContent {
            throw Refusal(
                ErrorCodes.downloadEssentialDownloadNotPermitted,
                "in-app content is off in basd's settings (inAppContent): no essential downloads")
        }
        var download = StoredDownload(record: record, appIdentifier: app.bundleIdentifier)
        if !app.launched {
            download.restriction = try preLaunchRestriction(for: record, of: app)
        }
        let stored = try store.schedule(download, chargingAllowance: !app.launched)
        if let request = engineRequest(for: stored) { engine.add(request) }
        return stored
    }

    private func activeDownload(app: String, identifier: String) throws -> StoredDownload {
        guard let download = try store.downloads(app: app).first(where: { $0.identifier == identifier && $0.state.isActive })
        else {
            throw Refusal(ErrorCodes.downloadNotScheduled, "\(app) has no scheduled download \"\(identifier)\"")
        }
        return download
    }

    private func activeDownload(uniqueIdentifier: String) throws -> StoredDownload {
        guard let download = try store.download(uniqueIdentifier: uniqueIdentifier), download.state.isActive else {
            throw Refusal(ErrorCodes.downloadNotScheduled, "no scheduled download has unique identifier \(uniqueIdentifier)")
        }
        return download
    }

    private func promote(_ download: StoredDownload) throws {
        try store.promote(uniqueIdentifier: download.uniqueIdentifier)
        engine.promote(download.uniqueIdentifier)
    }

    func cancel(app: String, identifier: String) throws {
        let download = try store.cancel(app: app, identifier: identifier)
        engine.cancel(download.uniqueIdentifier)
        progress[download.uniqueIdentifier] = nil
    }

    func info(_ download: StoredDownload) -> DownloadInfo {
        // A running transfer's bytes as the engine last reported them: the store records progress
        // at most once a second (each record is an fsync), so it can be a second behind.
        var bytes = download.bytesOnDisk
        if download.state.isActive, let mark = progress[download.uniqueIdentifier] { bytes = max(bytes, mark.bytes) }
        return DownloadInfo(
            uniqueIdentifier: download.uniqueIdentifier, download: payload(download), state: download.state.rawValue,
            isForeground: download.isForeground, bytesOnDisk: bytes,
            appIdentifier: download.appIdentifier, attempts: download.attempts, errorCode: download.lastError?.code,
            errorMessage: download.lastError?.message)
    }

    func payload(_ download: StoredDownload) -> DownloadPayload {
        DownloadPayload(
            identifier: download.identifier, uniqueIdentifier: download.uniqueIdentifier, url: download.url,
            headers: download.headers, applicationGroupIdentifier: download.applicationGroupIdentifier,
            priority: download.priority, isEssential: download.isEssential, fileSize: download.expectedSize,
            sha256: download.sha256)
    }

    func record(_ download: StoredDownload) -> DownloadRecord {
        DownloadRecord(
            identifier: download.identifier, uniqueIdentifier: download.uniqueIdentifier, url: download.url,
            applicationGroupIdentifier: download.applicationGroupIdentifier, fileSize: download.expectedSize ?? 0,
            priority: download.priority, isEssential: download.isEssential, state: Int32(download.state.rawValue),
            headers: download.headers, sha256: download.sha256)
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

    // MARK: - Exclusive control

    private func lockStatus(app bundleIdentifier: String) throws -> LockInfo {
        guard let app = try store.app(bundleIdentifier) else {
            throw Refusal(.callerConnectionNotAccepted, "app \(bundleIdentifier) is not registered with basd")
        }
        guard let group = app.appGroupIdentifier else {
            throw Refusal(ErrorCodes.downloadInvalid, "\(bundleIdentifier) has no app group, so no lock")
        }
        let path = ExclusiveControlLock.path(inContainer: containers.container(group: group))
        let holder = try ExclusiveControlLock.holder(path: path)
        return LockInfo(
            appIdentifier: bundleIdentifier, appGroupIdentifier: group, lockPath: path, held: holder != nil,
            holderPID: holder?.pid)
    }
}
