import BAAppBundle
import BACore
import BADaemonProtocol
import BAPacks
import BAStore
import Foundation

/// A `downloads(for:manifestURL:extensionInfo:)` content request.
enum ContentRequestKind: String, Sendable {
    case install, update, periodic, languageChange

    /// `BAContentRequest`'s raw value.
    var rawValue32: Int32 {
        switch self {
        case .install: 1
        case .update: 2
        case .periodic: 3
        case .languageChange: 4
        }
    }

    var runEvent: StoredExtensionRun.Event {
        switch self {
        case .install: .install
        case .update: .update
        case .periodic: .periodic
        case .languageChange: .languageChange
        }
    }
}

/// Install, update and simulate: the owner of app registration and of content-request calls
/// (`downloads(for:manifestURL:extensionInfo:)`), which it makes through the app's extension slot
/// (``EventRouter/requestExtension(for:what:start:)``) so no two calls of one app overlap.
/// Between calls it keeps only the content requests whose manifest fetch failed, to try again.
///
/// It knows only the services below it, given in
/// ``init(store:containers:configuration:executor:delivery:extensions:transfers:packs:log:)``: the event
/// router that keeps each app's extension slot, the extension caller, and the transfers. It asks
/// and reports upward through its ``delegate``.
final class AppInstaller: @unchecked Sendable {
    let store: BAStore
    /// Where app group containers are prepared and deleted.
    let containers: AppContainers
    /// The executor every method runs on (slices and manifest retries are posted to it).
    let executor: ServiceExecutor
    /// basd's clock (when a manifest is tried again).
    let clock: ServiceClock
    /// The app's extension slot (the ``EventRouter``).
    let delivery: any InstallerDelivery
    /// Where content requests call extensions (the ``ExtensionCaller``).
    let extensions: any ExtensionCalling
    /// Manifests, allowances, and what a call's answer or an uninstall does to transfers (the
    /// ``TransferCoordinator``).
    let transfers: any InstallerTransfers
    /// Asset packs: an install or update reads the download manifest and starts what its
    /// policies call for (the ``PackService``).
    let packs: PackService
    let log: @Sendable (String) -> Void
    /// Who keeps the call gates and the periodic runs (``BasdServices``, for the scheduler);
    /// weak, as it owns the installer.
    weak var delegate: (any AppInstallerDelegate)?
    /// Content requests whose manifest could not be fetched, by app: tried again by themselves.
    var manifestRetries: [String: ManifestRetry] = [:]
    /// How many downloads an uninstall deletes per turn of the executor (``TurnSize``).
    var uninstallSlice = TurnSize(range: 10...5_000, start: 100)

    /// An installer that calls extensions through `extensions` in the slot `delivery` keeps, and
    /// schedules what they return with `transfers`; set ``delegate`` before the first call.
    init(
        store: BAStore, containers: AppContainers, configuration: BasdServices.Configuration,
        executor: ServiceExecutor, delivery: any InstallerDelivery, extensions: any ExtensionCalling,
        transfers: any InstallerTransfers, packs: PackService, log: @escaping @Sendable (String) -> Void
    ) {
        self.packs = packs
        self.store = store
        self.containers = containers
        self.executor = executor
        self.clock = configuration.clock
        self.delivery = delivery
        self.extensions = extensions
        self.transfers = transfers
        self.log = log
    }

    /// `installApp`: reads the app's `Info.plist`, registers it, then (for an install or an
    /// update) fetches the manifest, calls the extension and schedules what it returns. `reply`
    /// gets the report once the call has ended (on the executor).
    ///
    /// The `Info.plist` is read on a thread of its own, never on the executor: the path is the
    /// user's, and a slow file system must not stop basd serving everyone else (a FIFO or a
    /// device is refused without blocking at all).
    func install(_ request: InstallRequest, reply: @escaping @Sendable (ServerMessage.Result) -> Void) {
        loadBundle(request.appDirectory) { [self] loaded in
            switch loaded {
            case .success(let bundle): install(bundle, mode: request.mode, reply: reply)
            case .failure(let error): reply(Refusal(.invalidApp, error.description).result)
            }
        }
    }

    /// Reads `directory/Info.plist` on a thread of its own, then calls `then` on the executor
    /// with the app or why it could not be read.
    func loadBundle(
        _ directory: String, then: @escaping @Sendable (Result<AppBundle, AppBundleError>) -> Void
    ) {
        let executor = self.executor
        let thread = Thread {
            let loaded = Result { () throws(AppBundleError) in try AppBundle.load(directory: directory) }
            executor.async { then(loaded) }
        }
        thread.name = "basd-read-app"
        thread.start()
    }

    private func install(
        _ bundle: AppBundle, mode: InstallRequest.Mode, reply: @escaping @Sendable (ServerMessage.Result) -> Void
    ) {
        let previous: StoredApp?
        let app: StoredApp
        do {
            previous = try store.app(bundle.bundleIdentifier)
            switch mode {
            case .install where previous != nil:
                throw Refusal(
                    .invalidApp,
                    "\(bundle.bundleIdentifier) is already installed (version \(previous?.version ?? "?")); update it with `ba update`"
                )
            case .update where previous == nil:
                throw Refusal(
                    .invalidApp, "\(bundle.bundleIdentifier) is not installed; install it first with `ba install`")
            default:
                break
            }
            _ = try register(
                AppRegistration(
                    bundleIdentifier: bundle.bundleIdentifier, version: bundle.version,
                    appGroupIdentifier: bundle.appGroupIdentifier, appDirectory: bundle.directory,
                    extensionPath: bundle.extensionPath),
                manifestURL: bundle.manifestURL,
                restrictions: StoredApp.Restrictions(
                    downloadAllowance: bundle.downloadAllowance,
                    essentialDownloadAllowance: bundle.essentialDownloadAllowance,
                    domainAllowList: bundle.domainAllowList, maxInstallSize: bundle.maxInstallSize,
                    essentialMaxInstallSize: bundle.essentialMaxInstallSize))
            guard let registered = try store.app(bundle.bundleIdentifier) else {
                throw Refusal(.internalError, "\(bundle.bundleIdentifier) vanished while being registered")
            }
            app = registered
        } catch let refusal as Refusal {
            reply(refusal.result)
            return
        } catch let error as BAStoreError {
            reply(Refusal(error).result)
            return
        } catch {
            reply(Refusal(.internalError, "installing \(bundle.bundleIdentifier) failed: \(error)").result)
            return
        }
        var report = ExtensionRunReport(
            bundleIdentifier: app.bundleIdentifier, version: app.version, previousVersion: previous?.version)
        let kind: ContentRequestKind
        switch mode {
        case .install: kind = .install
        case .update: kind = .update
        case .automatic:
            guard let previous else {
                kind = .install
                break
            }
            guard previous.version != app.version else {
                report.skipped = "version \(app.version) is already installed; `ba update` runs the update event anyway"
                reply(.extensionRun(report))
                return
            }
            kind = .update
        }
        // Asset packs first: the manifest is read and essential and prefetch packs start before
        // the extension is called, so both go on together; the report says if it failed.
        let event: PackManifest.InstallationEvent = kind == .install ? .firstInstallation : .subsequentUpdate
        packs.appInstalled(
            app, hasPacks: bundle.hasManagedAssetPacks, publicKey: bundle.assetPackPublicKey, event: event
        ) { [self, report] failure in
            executor.async { [self] in
                var report = report
                report.packProblem = failure?.message
                if packs.hasPacks(app.bundleIdentifier) {
                    report.hasPacks = true
                    report.essentialPacks = packs.essentialPacks(app: app.bundleIdentifier, event: event)
                }
                guard app.extensionPath != nil || report.hasPacks != true else {
                    // An app with packs and no extension: nothing more to call.
                    reply(.extensionRun(report))
                    return
                }
                // A one-off event the installer triggered: like `ba simulate`, outside the daily
                // runtime allowance (its runtime still counts) but under the per-call deadline. The
                // switches, quarantine and the rest are `refusalToCall`'s: the report says which.
                callContentRequest(kind, of: app, bypassAllowance: true, report: report) { reply(.extensionRun($0)) }
            }
        }
    }

    /// `simulate`: wakes the extension as if `event` had happened, outside the daily runtime
    /// allowance (as Apple's `backgroundassets-debug` does) but within the per-call deadline.
    func simulate(
        _ event: SimulatedEvent, app bundleIdentifier: String, reply: @escaping @Sendable (ServerMessage.Result) -> Void
    ) throws {
        guard let app = try store.app(bundleIdentifier) else {
            throw Refusal(.callerConnectionNotAccepted, "app \(bundleIdentifier) is not registered with basd")
        }
        let kind: ContentRequestKind =
            switch event {
            case .install: .install
            case .update: .update
            case .periodic: .periodic
            case .languageChange: .languageChange
            }
        let report = ExtensionRunReport(bundleIdentifier: app.bundleIdentifier, version: app.version)
        callContentRequest(kind, of: app, bypassAllowance: true, report: report) { [self] report in
            // A simulated periodic run resets the schedule like any run.
            if kind == .periodic, report.event != nil {
                delegate?.installer(self, periodicRanFor: app.bundleIdentifier)
            }
            reply(.extensionRun(report))
        }
    }

    /// Registers (or re-registers) an app and prepares its container; returns the registration it replaced.
    @discardableResult
    func register(
        _ registration: AppRegistration, manifestURL: String?, restrictions: StoredApp.Restrictions
    ) throws
        -> StoredApp?
    {
        // The rules an Info.plist keeps to, for a registration made over the protocol too: the
        // identifiers become folders, the paths are read later.
        var violations = [
            DownloadRules.checkFolderName(registration.bundleIdentifier, what: "bundle identifier"),
            DownloadRules.checkPath(registration.appDirectory, what: "app directory"),
        ]
        if let group = registration.appGroupIdentifier {
            violations.append(DownloadRules.checkFolderName(group, what: "app group identifier"))
        }
        if let library = registration.extensionPath {
            violations.append(DownloadRules.checkPath(library, what: "extension path"))
        }
        if let violation = violations.lazy.compactMap({ $0 }).first {
            throw Refusal(AppleErrorCode.downloadInvalid.rawValue, violation.reason)
        }
        let previous = try store.register(
            StoredApp(
                bundleIdentifier: registration.bundleIdentifier, version: registration.version,
                appGroupIdentifier: registration.appGroupIdentifier, appDirectory: registration.appDirectory,
                extensionPath: registration.extensionPath, manifestURL: manifestURL, restrictions: restrictions))
        if let group = registration.appGroupIdentifier { try containers.prepare(group: group) }
        log("registered \(registration.bundleIdentifier) \(registration.version)")
        delegate?.installer(self, registered: registration.bundleIdentifier)
        return previous
    }

}
