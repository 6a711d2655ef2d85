internal import BACore
internal import BADaemonProtocol
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How ``BADownloadManager`` reaches basd from an app process (outside an extension call).
///
/// Connects lazily: on the first call, or when a delegate is set. While a delegate is set the
/// connection is kept up: when basd goes away, a maintenance thread reconnects with a backoff
/// (20 ms doubling to 1 s, for as long as a delegate is set) and subscribes to events again. A call
/// made while disconnected tries one reconnect, then throws 55 naming basd's socket.
///
/// Threads: calls block their caller; events arrive on the `DaemonClient` reader thread and are
/// handed to ``AppEventDelivery``'s one delivery thread; reconnects run on a maintenance thread.
final class AppDaemonConnection: @unchecked Sendable {
    /// The process's connection; the delegate it serves is `BADownloadManager.shared.delegate`.
    static let shared = AppDaemonConnection(delegate: { BADownloadManager.shared.delegate })

    static let minimumBackoff = 0.02
    static let maximumBackoff = 1.0

    private let delegateProvider: @Sendable () -> (any BADownloadManagerDelegate)?
    /// Serializes connecting and subscribing (so two callers never open two connections).
    /// Never taken while `state` is held.
    private let connecting = NSLock()
    /// Guards the fields below; held only briefly.
    private let state = NSLock()
    private var configuredBundleIdentifier: String?
    private var configuredSocketPath: String?
    private var client: DaemonClient?
    /// The connection on which `subscribeEvents` was answered.
    private var subscribedClient: ObjectIdentifier?
    /// The app group container from basd's welcome (kept across reconnects).
    private var container: String?
    /// The app group (`BAAppGroupID`) that container belongs to, from the same welcome.
    private var containerGroup: String?
    private var maintaining = false
    private var maintenanceRequested = false

    /// Hands events to the delegate on its own thread.
    let delivery: AppEventDelivery
    /// The app group's exclusive-control lock, one per process.
    let exclusiveControl = AppExclusiveControl()

    init(delegate: @escaping @Sendable () -> (any BADownloadManagerDelegate)?) {
        delegateProvider = delegate
        delivery = AppEventDelivery(delegate: delegate)
        delivery.connection = self
    }

    // MARK: Configuration and connecting

    /// Sets the bundle identifier and socket (nil = resolve as usual); drops the current
    /// connection so the next call (or the delegate's reconnect) uses them.
    func configure(bundleIdentifier: String?, socketPath: String?) {
        connecting.lock()
        let old = state.withLock {
            configuredBundleIdentifier = bundleIdentifier
            configuredSocketPath = socketPath
            defer {
                client = nil
                subscribedClient = nil
                container = nil
                containerGroup = nil
            }
            return client
        }
        old?.close()
        connecting.unlock()
        if delegateProvider() != nil { maintain() }
    }

    /// Who to connect as, and where.
    func identity() throws(BAError) -> AppIdentity {
        let (bundle, socket) = state.withLock { (configuredBundleIdentifier, configuredSocketPath) }
        let environment = ProcessInfo.processInfo.environment
        let identifier = try AppIdentity.resolveBundleIdentifier(
            configured: bundle, environment: environment, executablePath: AppIdentity.currentExecutablePath)
        return AppIdentity(
            bundleIdentifier: identifier, socketPath: socket ?? DaemonProtocol.defaultSocketPath(environment))
    }

    /// The live connection: the current one, or a new one (one attempt). Subscribes to events
    /// when a delegate is set and this connection has not subscribed yet.
    func connectedClient() throws(BAError) -> DaemonClient {
        connecting.lock()
        defer { connecting.unlock() }
        var live: DaemonClient
        if let existing = state.withLock({ client }), !existing.isClosed {
            live = existing
        } else {
            // Closing a connection that basd ended frees its socket (waits for its reader thread).
            state.withLock { client }?.close()
            let identity = try identity()
            do {
                live = try DaemonClient(
                    socketPath: identity.socketPath,
                    client: ClientInfo(role: .app, bundleIdentifier: identity.bundleIdentifier, pid: getpid()),
                    onEvent: { [delivery] event in delivery.enqueue(event) },
                    onClose: { [weak self] _ in self?.connectionClosed() })
            } catch {
                throw Self.map(error)
            }
            let welcome = live.welcome
            state.withLock {
                client = live
                subscribedClient = nil
                if let path = welcome.appGroupContainer {
                    container = path
                    containerGroup = welcome.appGroupIdentifier
                }
            }
        }
        if delegateProvider() != nil && state.withLock({ subscribedClient }) != ObjectIdentifier(live) {
            do throws(DaemonClientError) {
                try live.call(.subscribeEvents)
                state.withLock { subscribedClient = ObjectIdentifier(live) }
            } catch {
                // The call the caller asked for may still work; delivery resumes at the next connection.
                Self.log("cannot subscribe to basd's download events: \(error.message)")
            }
        }
        return live
    }

    /// Called on the reader thread when basd ends the connection.
    private func connectionClosed() {
        if delegateProvider() != nil { maintain() }
    }

    /// A delegate was set: connect and subscribe off the caller's thread, and hand over any
    /// events that waited for a delegate.
    func delegateWasSet() {
        delivery.resume()
        maintain()
    }

    /// Makes sure a maintenance thread is (re)connecting.
    private func maintain() {
        let start = state.withLock {
            maintenanceRequested = true
            if maintaining { return false }
            maintaining = true
            return true
        }
        guard start else { return }
        let thread = Thread { [self] in maintenanceLoop() }
        thread.name = "ba-daemon-reconnect"
        thread.start()
    }

    private func maintenanceLoop() {
        var backoff = Self.minimumBackoff
        while true {
            let run = state.withLock {
                if maintenanceRequested {
                    maintenanceRequested = false
                    return true
                }
                maintaining = false
                return false
            }
            guard run else { return }
            guard delegateProvider() != nil else { continue }
            do throws(BAError) {
                _ = try identity()
            } catch {
                // Retrying cannot help until the app is configured.
                Self.log("cannot deliver download events: \(error.reason)")
                continue
            }
            do throws(BAError) {
                _ = try connectedClient()
                backoff = Self.minimumBackoff
            } catch {
                Thread.sleep(forTimeInterval: backoff)
                backoff = min(backoff * 2, Self.maximumBackoff)
                state.withLock { maintenanceRequested = true }
            }
        }
    }

    // MARK: Calls

    /// Sends `request` on the live connection (connecting once if needed).
    @discardableResult
    func call(_ request: Request) throws(BAError) -> ServerMessage.Result {
        let client = try connectedClient()
        do {
            return try client.call(request)
        } catch {
            throw Self.map(error)
        }
    }

    func schedule(_ download: DownloadDescription) throws(BAError) {
        try call(.schedule(download))
    }

    func startForeground(_ identifier: String) throws(BAError) {
        try call(.startForeground(identifier: identifier))
    }

    func cancel(_ identifier: String) throws(BAError) {
        try call(.cancel(identifier: identifier))
    }

    func currentDownloads() throws(BAError) -> [BAURLDownload] {
        let result = try call(.currentDownloads)
        guard case .downloads(let downloads) = result else {
            throw BAError(.callerConnectionInvalid, reason: "basd answered currentDownloads with \(result)")
        }
        return downloads.compactMap(Self.download(from:))
    }

    /// The app group container (from basd's welcome; remembered once known, so locking keeps
    /// working while basd restarts).
    func containerPath() throws(BAError) -> String {
        if let known = state.withLock({ container }) { return known }
        let client = try connectedClient()
        guard let path = client.welcome.appGroupContainer else {
            throw BAError(
                .downloadInvalid,
                reason: "basd reports no app group container for \(client.welcome.bundleIdentifier ?? "this app"), "
                    + "so there is no exclusive-control lock: give the app a BAAppGroupID in its Info.plist and "
                    + "register it again (ba install)")
        }
        return path
    }

    /// The app group container when `group` is the app's group (connecting once if it is not
    /// known yet), else nil: `FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`.
    func containerPath(forGroup group: String) -> String? {
        guard !group.isEmpty else { return nil }
        if let known = state.withLock({ container.map { ($0, containerGroup) } }) {
            return Self.container(known.0, ofGroup: known.1, matches: group)
        }
        let client: DaemonClient
        do {
            client = try connectedClient()
        } catch {
            Self.log("no app group container for \(group): \(error.reason)")
            return nil
        }
        guard let path = client.welcome.appGroupContainer else { return nil }
        return Self.container(path, ofGroup: client.welcome.appGroupIdentifier, matches: group)
    }

    /// `path` if it is `group`'s container: by the group basd named, else (an older basd) by the
    /// container's folder name, which is the group identifier.
    static func container(_ path: String, ofGroup named: String?, matches group: String) -> String? {
        let owner = named ?? URL(fileURLWithPath: path).lastPathComponent
        return owner == group ? path : nil
    }

    func acknowledge(throughSequence sequence: Int64) {
        // No connection: basd redelivers after the reconnect, and the filter drops and acknowledges them.
        guard let client = state.withLock({ client }), !client.isClosed else { return }
        do throws(DaemonClientError) {
            try client.call(.acknowledgeEvents(throughSequence: sequence))
        } catch {
            Self.log("cannot acknowledge events through \(sequence): \(error.message)")
        }
    }

    func respondToChallenge(_ uniqueIdentifier: String, _ disposition: Int, _ user: String?, _ password: String?) {
        do throws(BAError) {
            try call(
                .respondToChallenge(
                    uniqueIdentifier: uniqueIdentifier, disposition: disposition, user: user, password: password))
        } catch {
            Self.log("cannot answer the authentication challenge of \(uniqueIdentifier): \(error.reason)")
        }
    }

    // MARK: Mapping

    /// basd's error as the app sees it: its `BAErrorCode` when it is one, else 55 for a request
    /// this basd does not serve (too old) and 56 for a broken exchange, with basd's message.
    static func map(_ error: DaemonClientError) -> BAError {
        if let code = BAError.Code(rawValue: error.code) { return BAError(code, reason: error.message) }
        switch error.code {
        case DaemonErrorCode.unknownMessage.rawValue, DaemonErrorCode.notServed.rawValue:
            return BAError(.callerConnectionNotAccepted, reason: "basd error \(error.code): \(error.message)")
        default:
            return BAError(.callerConnectionInvalid, reason: "basd error \(error.code): \(error.message)")
        }
    }

    /// A download as basd reports it (nil if its URL does not parse).
    static func download(from info: DownloadInfo) -> BAURLDownload? {
        var download = info.download
        download.uniqueIdentifier = info.uniqueIdentifier
        download.state = info.state
        return BAURLDownload(record: download)
    }

    /// Writes a diagnostic line to standard error (an app process has no host log).
    static func log(_ message: String) {
        FileHandle.standardError.write(Data("[BackgroundAssets] \(message)\n".utf8))
    }
}
