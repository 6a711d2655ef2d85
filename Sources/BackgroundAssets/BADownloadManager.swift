internal import BACore
internal import CBAExtension
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Schedules, promotes, cancels and lists an app's downloads, and coordinates access to the app
/// group container with the extension.
///
/// Inside an extension call, every method goes to the host that runs the extension. In an app
/// process, methods talk to `basd` over its unix socket (`BA_SOCKET`, else the default path),
/// as the app whose bundle identifier ``baConfigure(bundleIdentifier:socketPath:)``,
/// `BA_BUNDLE_IDENTIFIER` or the `Info.plist` beside the executable gives. The connection is made
/// on first use; while basd cannot be reached, methods throw
/// ``BAError/Code/callerConnectionNotAccepted`` with basd's socket path in the reason.
///
/// ```swift
/// BADownloadManager.shared.delegate = self   // events arrive on one background thread
/// let downloads = try BADownloadManager.shared.fetchCurrentDownloads()
/// if let level = downloads.first(where: { $0.identifier == "level-2" }) {
///     try BADownloadManager.shared.startForegroundDownload(level)
/// }
/// ```
/// See `docs/app-client.md`.
public final class BADownloadManager: NSObject, @unchecked Sendable {
    /// The shared manager.
    public static let shared = BADownloadManager()

    private let delegateLock = NSLock()
    private weak var _delegate: (any BADownloadManagerDelegate)?

    /// The delegate that receives download events (held weakly).
    ///
    /// In an app process, setting it connects to basd in the background and subscribes to the
    /// app's events; the connection is re-established whenever basd restarts, for as long as a
    /// delegate is set. Callbacks run on one dedicated thread (not the main thread, not the
    /// Swift concurrency pool), one at a time, in the order the events happened. Events that
    /// arrive while no delegate is set wait until one is.
    ///
    /// In an extension it is not used: basd wakes the extension for its downloads' events and
    /// calls its `BADownloaderExtension` methods (`backgroundDownload(_:finishedWithFileURL:)`, …)
    /// instead, because an extension keeps nothing between calls. Setting it there logs a notice
    /// saying so.
    public weak var delegate: (any BADownloadManagerDelegate)? {
        get { delegateLock.withLock { _delegate } }
        set {
            delegateLock.withLock { _delegate = newValue }
            guard newValue != nil else { return }
            if let extensionCall = ExtensionHostConnection.active {
                extensionCall.log(
                    BA_LOG_NOTICE,
                    "BADownloadManager.delegate is not used in an extension: its downloads' events arrive "
                        + "through the BADownloaderExtension methods, each in a call of its own")
            } else {
                AppDaemonConnection.shared.delegateWasSet()
            }
        }
    }

    private override init() {}

    /// Where calls go: the host of the running extension call, or basd for an app.
    private enum Route {
        case extensionHost(ExtensionHostConnection)
        case app(AppDaemonConnection)
    }

    private func route() -> Route {
        if let connection = ExtensionHostConnection.active { return .extensionHost(connection) }
        return .app(AppDaemonConnection.shared)
    }

    private func urlDownload(_ download: BADownload) throws(BAError) -> BAURLDownload {
        guard let download = download as? BAURLDownload else {
            throw BAError(.downloadInvalid, reason: "only BAURLDownload downloads can be scheduled")
        }
        try download.validate()
        return download
    }

    /// Linux addition: tells the manager who this app is and where basd listens, instead of
    /// `BA_BUNDLE_IDENTIFIER`, the `Info.plist` beside the executable, and `BA_SOCKET`.
    ///
    /// Call it before the first other call. Calling it again drops the current connection; the
    /// next call (or, with a delegate set, the background reconnect) uses the new values.
    /// - Parameters:
    ///   - bundleIdentifier: The app's `CFBundleIdentifier`, as registered with basd (`ba install`);
    ///     nil resolves it as usual.
    ///   - socketPath: basd's socket; nil uses `BA_SOCKET` or the default path.
    ///
    /// ```swift
    /// BADownloadManager.shared.baConfigure(bundleIdentifier: "com.example.game")
    /// ```
    public func baConfigure(bundleIdentifier: String? = nil, socketPath: String? = nil) {
        AppDaemonConnection.shared.configure(bundleIdentifier: bundleIdentifier, socketPath: socketPath)
    }

    /// Schedules a download to run in the background.
    ///
    /// From an extension this is refused (code 50) while `downloads(for:…)` runs: return the
    /// download from it instead. Throws 100 if the identifier is already scheduled, 55 when basd
    /// cannot be reached, and basd's other refusals (e.g. 202 for a host outside the allow-list).
    ///
    /// A download that has ended (`.failed` or `.finished`, e.g. the `removingEssential()` copy
    /// of a failed essential download an extension re-queues) is scheduled as a new transfer
    /// under a fresh ``BADownload/uniqueIdentifier``: basd keeps the ended one's record.
    public func scheduleDownload(_ download: BADownload) throws {
        let download = try urlDownload(download)
        var record = download.record
        if download.state == .failed || download.state == .finished { record.uniqueIdentifier = UUID().uuidString }
        switch route() {
        case .extensionHost(let connection): try connection.schedule(record)
        case .app(let app): try app.schedule(record)
        }
    }

    /// Starts (or promotes) a download in the foreground, keeping bytes already downloaded; the
    /// delegate sees `downloadDidPause` then `downloadDidBegin` for a running download.
    /// Apps only: an extension gets code 50. Throws 101 if the download is not scheduled.
    public func startForegroundDownload(_ download: BADownload) throws {
        _ = try urlDownload(download)
        switch route() {
        case .extensionHost:
            throw BAError(
                .callFromExtensionNotAllowed,
                reason: "startForegroundDownload is only available to the app, not to its extension")
        case .app(let app): try app.startForeground(download.identifier)
        }
    }

    /// Cancels a scheduled download; throws 101 if it is not scheduled.
    public func cancel(_ download: BADownload) throws {
        switch route() {
        case .extensionHost(let connection): try connection.cancel(download.identifier)
        case .app(let app): try app.cancel(download.identifier)
        }
    }

    /// The app's current downloads (blocks while basd answers).
    public func fetchCurrentDownloads() throws -> [BADownload] {
        switch route() {
        case .extensionHost(let connection):
            return try connection.currentDownloads().compactMap { BAURLDownload(record: $0) }
        case .app(let app):
            return try app.currentDownloads()
        }
    }

    /// The app's current downloads, delivered to a completion handler.
    ///
    /// The handler runs later, on a thread of its own (as on Apple's system, not before this
    /// method returns); inside an extension call, the call does not end before it has run.
    public func fetchCurrentDownloads(completionHandler: @escaping ([BADownload], (any Error)?) -> Void) {
        CompletionHandlers.run { [self] in
            do {
                completionHandler(try fetchCurrentDownloads(), nil)
            } catch {
                completionHandler([], error)
            }
        }
    }

    /// The app's current downloads. In an app, basd is asked on a thread of its own, so the
    /// awaiting task does not hold a thread of the concurrency pool.
    public var currentDownloads: [BADownload] {
        get async throws {
            switch route() {
            case .extensionHost: return try fetchCurrentDownloads()
            case .app(let app):
                return try await Self.offThread { () throws(BAError) -> [BADownload] in try app.currentDownloads() }
            }
        }
    }

    /// Acquires exclusive control of the app group container, waiting as long as it takes, runs
    /// `performHandler` while holding it, then releases it.
    ///
    /// The handler gets `(true, nil)` when the lock is held, or `(false, error)`. The lock is the
    /// app group's kernel lock, shared with the extension (and other processes of the app): at
    /// most one holds it; it is released when the handler returns or the holder dies.
    ///
    /// As on Apple's system the method returns at once: the wait and the handler run on a thread
    /// of their own. Inside a delegate callback or an extension call, the callback (and the life of
    /// a finished file it was handed) does not end before the handler has run.
    public func withExclusiveControl(_ performHandler: @escaping (Bool, (any Error)?) -> Void) {
        CompletionHandlers.run { [self] in exclusiveControl(deadline: nil, performHandler) }
    }

    /// Like ``withExclusiveControl(_:)`` but gives up at `date`; `Date()` tries once.
    ///
    /// When the lock is not acquired in time the handler gets `(false, error)` (a ``BAError``
    /// whose reason says so). The handler runs asynchronously, as for ``withExclusiveControl(_:)``.
    public func withExclusiveControl(
        beforeDate date: Date, perform performHandler: @escaping (Bool, (any Error)?) -> Void
    ) {
        CompletionHandlers.run { [self] in exclusiveControl(deadline: date, performHandler) }
    }

    /// Runs `body` while holding exclusive control, waiting as long as it takes.
    ///
    /// In an app the wait happens on a thread of its own: the awaiting task does not block a
    /// thread of the concurrency pool. The lock is released when `body` returns or throws.
    public func withExclusiveControl<R>(_ body: () async throws -> R) async throws -> R {
        try await exclusiveControl(deadline: nil, body)
    }

    /// Runs `body` while holding exclusive control, giving up at `date` (`Date()` tries once).
    public func withExclusiveControl<R>(before date: Date, _ body: () async throws -> R) async throws -> R {
        try await exclusiveControl(deadline: date, body)
    }

    /// The talks' spelling of ``scheduleDownload(_:)``.
    @available(*, deprecated, renamed: "scheduleDownload(_:)")
    public func schedule(_ download: BADownload) throws { try scheduleDownload(download) }

    /// The talks' one-argument handler form of ``withExclusiveControl(_:)``: the handler gets nil
    /// when the lock is held, or the error.
    @available(*, deprecated, message: "use withExclusiveControl(_:) with a (Bool, Error?) handler")
    public func withExclusiveControl(_ performHandler: @escaping ((any Error)?) -> Void) {
        CompletionHandlers.run { [self] in
            exclusiveControl(deadline: nil) { acquired, error in performHandler(acquired ? nil : error) }
        }
    }

    static func milliseconds(until date: Date) -> Int64 {
        max(0, Int64((date.timeIntervalSinceNow * 1000).rounded(.up)))
    }

    private func exclusiveControl(deadline: Date?, _ handler: (Bool, (any Error)?) -> Void) {
        switch route() {
        case .extensionHost(let connection):
            do {
                try connection.acquireExclusiveControl(
                    timeoutMilliseconds: deadline.map(Self.milliseconds(until:)) ?? -1)
                handler(true, nil)
                connection.releaseExclusiveControl()
            } catch {
                handler(false, error)
            }
        case .app(let app):
            do throws(BAError) {
                try app.exclusiveControl.acquire(containerPath: try app.containerPath(), deadline: deadline)
            } catch {
                handler(false, error)
                return
            }
            handler(true, nil)
            app.exclusiveControl.release()
        }
    }

    private func exclusiveControl<R>(deadline: Date?, _ body: () async throws -> R) async throws -> R {
        switch route() {
        case .extensionHost(let connection):
            try connection.acquireExclusiveControl(timeoutMilliseconds: deadline.map(Self.milliseconds(until:)) ?? -1)
            defer { connection.releaseExclusiveControl() }
            return try await body()
        case .app(let app):
            try await Self.offThread { () throws(BAError) in
                try app.exclusiveControl.acquire(containerPath: try app.containerPath(), deadline: deadline)
            }
            defer { app.exclusiveControl.release() }
            return try await body()
        }
    }

    /// Runs blocking `work` on a new thread and resumes the caller with its result.
    private static func offThread<T: Sendable>(
        _ work: @escaping @Sendable () throws(BAError) -> T
    )
        async throws(BAError)
        -> T
    {
        let result: Result<T, BAError> = await withCheckedContinuation { continuation in
            Thread {
                do throws(BAError) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }.start()
        }
        return try result.get()
    }
}
