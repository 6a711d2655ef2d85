internal import BADaemonProtocol
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How ``AssetPackManager`` reaches basd: its own connection (as the app, from the identity
/// ``BADownloadManager`` resolves), which follows the app's pack events from the moment it is
/// made and hands them to the ``PackEventHub``.
///
/// Connects lazily, on the first call; a call made while disconnected connects again (one
/// attempt). While something listens to status updates when basd goes away, a background thread
/// reconnects with a backoff (20 ms doubling to 1 s) for as long as it listens.
///
/// Threads: calls block their caller (the manager runs them off the cooperative pool); events
/// arrive on the client's reader thread.
final class PackConnection: @unchecked Sendable {
    static let shared = PackConnection(identity: { () throws(BAError) -> AppIdentity in
        try AppDaemonConnection.shared.identity()
    })

    let hub = PackEventHub()
    private let identity: @Sendable () throws(BAError) -> AppIdentity
    /// Serializes connecting; never taken while `state` is held.
    private let connecting = NSLock()
    private let state = NSLock()
    private var client: DaemonClient?
    /// This app's own pack folder in the app group container from basd's welcome
    /// (``packsFolder()``; kept across reconnects).
    private var packs: String?
    private var reconnecting = false

    init(identity: @escaping @Sendable () throws(BAError) -> AppIdentity) {
        self.identity = identity
        hub.cancel = { [weak self] pack in
            // From the Progress's cancellation handler, on whatever thread cancelled it.
            guard let connection = self else { return }
            DispatchQueue.global().async { _ = try? connection.call(PackCommand(action: .cancel, pack: pack)) }
        }
    }

    /// The live connection, following the app's pack events (a new one if needed: one attempt).
    func connected() throws(BAError) -> DaemonClient {
        connecting.lock()
        defer { connecting.unlock() }
        let previous = state.withLock { client }
        if let previous, !previous.isClosed { return previous }
        previous?.close()
        let who = try identity()
        let live: DaemonClient
        let listing: ServerMessage.Result
        do {
            live = try DaemonClient(
                socketPath: who.socketPath,
                client: ClientInfo(role: .app, bundleIdentifier: who.bundleIdentifier, pid: getpid()),
                onPackEvent: { [hub] event in hub.received(event) },
                onClose: { [weak self] _ in self?.connectionClosed() })
            listing = try live.call(.packs(PackCommand(action: .follow)))
        } catch {
            throw Self.map(error)
        }
        if case .packs(let report) = listing {
            hub.remember(report.packs)
            // After a lost connection: what ended meanwhile.
            if previous != nil { hub.settle(report.packs) }
        }
        state.withLock {
            client = live
            if let path = live.welcome.appGroupContainer {
                packs = Self.packsFolder(container: path, app: who.bundleIdentifier)
            }
        }
        return live
    }

    /// The connection is gone or could not be made (basd stopped or is not running): not an answer
    /// of basd's. `error` is what to tell the app.
    struct Lost: Error {
        var error: BAError
        /// This process had reached basd before (so basd is likely restarting, not absent).
        var wasConnected: Bool
    }

    /// Whether a connection was ever made.
    private var everConnected: Bool { state.withLock { client != nil } }

    /// Sends a `packs` request for this app; its packs as basd answers.
    ///
    /// - Throws: ``Lost`` when basd cannot be reached or the connection broke (after one more
    ///   attempt on a new connection); for basd's refusal, the error of ``map(_:of:)``.
    func call(_ command: PackCommand) throws -> [PackInfo] { try callReport(command).packs }

    /// ``call(_:)``, with basd's whole answer (an app's listing carries its languages).
    func callReport(_ command: PackCommand) throws -> PackReport {
        var attempt = 0
        while true {
            let live: DaemonClient
            do throws(BAError) {
                live = try connected()
            } catch {
                // Connecting, the handshake or `follow` failed: no answer to this request.
                throw Lost(error: error, wasConnected: everConnected)
            }
            do {
                let result = try live.call(.packs(command))
                guard case .packs(let report) = result else {
                    throw BAError(.callerConnectionInvalid, reason: "basd answered a packs request with \(result)")
                }
                hub.remember(report.packs)
                return report
            } catch let error as DaemonClientError {
                // The connection ended under the call: once more on a new one.
                if live.isClosed {
                    guard attempt > 0 else {
                        attempt += 1
                        continue
                    }
                    throw Lost(error: Self.map(error), wasConnected: true)
                }
                throw Self.map(error, of: command)
            } catch {
                throw error as? BAError ?? BAError(.callerConnectionInvalid, reason: "\(error)")
            }
        }
    }

    /// The folder where this app's local packs are: `CONTAINER/AppAssetPacks/BUNDLE_ID`, its own
    /// even when other apps of its group have packs (`docs/packs.md`, "Where the files are"), as
    /// basd named the container (kept once known).
    ///
    /// basd not reachable before it was ever reached: basd's own folder of the app's pack links
    /// in its default state folder, `STATE/packs/BUNDLE_ID/AssetPacks` (``offlinePacksFolder``),
    /// when it is there; it is looked for again on each call, basd first.
    func packsFolder() throws(BAError) -> String {
        if let known = state.withLock({ packs }) { return known }
        do {
            _ = try connected()
        } catch {
            guard let who = try? identity(),
                let offline = Self.offlinePacksFolder(
                    app: who.bundleIdentifier, environment: ProcessInfo.processInfo.environment)
            else { throw error }
            return offline
        }
        guard let known = state.withLock({ packs }) else {
            throw BAError(
                .callerConnectionNotAccepted,
                reason: "basd has no app group container for this app: asset packs need BAAppGroupID in its Info.plist")
        }
        return known
    }

    /// `CONTAINER/AppAssetPacks/APP`: basd links it to the app's packs (one namespace per app).
    static func packsFolder(container: String, app: String) -> String { container + "/AppAssetPacks/" + app }

    /// Without basd: `STATE/packs/APP/AssetPacks` in basd's default state folder (`$BA_STATE_DIR`,
    /// else `$XDG_DATA_HOME/background-assets`, …), where the container's `AppAssetPacks/APP`
    /// leads, when it is a folder; else nil.
    static func offlinePacksFolder(app: String, environment: [String: String]) -> String? {
        guard LocalPacks.isPlainName(app) else { return nil }
        let path = DaemonProtocol.defaultStateDirectory(environment) + "/packs/" + app + "/AssetPacks"
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue else {
            return nil
        }
        return path
    }

    /// Starts connecting in the background (a listener began; nothing to wait for).
    func connectInBackground() {
        DispatchQueue.global().async { [self] in
            if (try? connected()) == nil { connectionClosed() }
        }
    }

    private func connectionClosed() {
        hub.connectionLost()
        guard hub.hasInterest else { return }
        let start = state.withLock {
            defer { reconnecting = true }
            return !reconnecting
        }
        guard start else { return }
        Thread.detachNewThread { [self] in
            var backoff = 0.02
            while hub.hasInterest {
                Thread.sleep(forTimeInterval: backoff)
                if (try? connected()) != nil { break }
                backoff = min(backoff * 2, 1)
            }
            state.withLock { reconnecting = false }
        }
    }

    static func map(_ error: DaemonClientError) -> BAError { AppDaemonConnection.map(error) }

    /// basd's refusal of a `packs` request as the app sees it: one of basd's pack codes
    /// (`docs/protocol.md`, "Errors": 1100 and up, a refused manifest or index, a parked job) is
    /// the pack's `localAvailabilityFailure` with that code underneath, as a failed download's
    /// is; any other, the ``BAError`` of ``map(_:)``.
    static func map(_ error: DaemonClientError, of command: PackCommand) -> any Error {
        guard error.code >= firstPackErrorCode else { return map(error) }
        return PackEventHub.failure(
            pack: command.pack ?? "", PackFailure(error.message, code: error.code))
    }

    /// The first of basd's pack error codes (`manifestUnsigned`).
    static let firstPackErrorCode = 1100
}
