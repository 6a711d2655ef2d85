internal import BAExtensionProtocol
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Schedules, promotes, cancels and lists an app's downloads, and coordinates access to the app
/// group container with the extension.
///
/// Inside an extension call, every method goes to the host that runs the extension. In an app
/// process, methods need the `basd` service client, which this build does not have yet: they throw
/// ``BAError/Code/callerConnectionNotAccepted``.
public final class BADownloadManager: NSObject, @unchecked Sendable {
    /// The shared manager.
    public static let shared = BADownloadManager()

    private let delegateLock = NSLock()
    private weak var _delegate: (any BADownloadManagerDelegate)?

    /// The delegate that receives download events (held weakly).
    public weak var delegate: (any BADownloadManagerDelegate)? {
        get { delegateLock.withLock { _delegate } }
        set { delegateLock.withLock { _delegate = newValue } }
    }

    private override init() {}

    private func connection() throws(BAError) -> ExtensionHostConnection {
        guard let connection = ExtensionHostConnection.active else {
            throw BAError(
                .callerConnectionNotAccepted,
                reason:
                    "this process is not an extension call and this build has no basd client yet; app processes cannot reach the download service"
            )
        }
        return connection
    }

    private func urlDownload(_ download: BADownload) throws(BAError) -> BAURLDownload {
        guard let download = download as? BAURLDownload else {
            throw BAError(.downloadInvalid, reason: "only BAURLDownload downloads can be scheduled")
        }
        try download.validate()
        return download
    }

    /// Schedules a download to run in the background.
    ///
    /// From an extension this is refused (code 50) while `downloads(for:…)` runs: return the
    /// download from it instead. Throws 100 if the identifier is already scheduled.
    public func scheduleDownload(_ download: BADownload) throws {
        let download = try urlDownload(download)
        try connection().schedule(download.record)
    }

    /// Starts (or promotes) a download in the foreground, keeping bytes already downloaded.
    /// Apps only: an extension gets code 50.
    public func startForegroundDownload(_ download: BADownload) throws {
        _ = try urlDownload(download)
        if ExtensionHostConnection.active != nil {
            throw BAError(
                .callFromExtensionNotAllowed,
                reason: "startForegroundDownload is only available to the app, not to its extension")
        }
        _ = try connection()
    }

    /// Cancels a scheduled download; throws 101 if it is not scheduled.
    public func cancel(_ download: BADownload) throws {
        try connection().cancel(download.identifier)
    }

    /// The app's current downloads.
    public func fetchCurrentDownloads() throws -> [BADownload] {
        try connection().currentDownloads().compactMap { BAURLDownload(record: $0) }
    }

    /// The app's current downloads, delivered to a completion handler.
    public func fetchCurrentDownloads(completionHandler: @escaping @Sendable ([BADownload], (any Error)?) -> Void) {
        do {
            completionHandler(try fetchCurrentDownloads(), nil)
        } catch {
            completionHandler([], error)
        }
    }

    /// The app's current downloads.
    public var currentDownloads: [BADownload] {
        get async throws { try fetchCurrentDownloads() }
    }

    /// Acquires exclusive control of the app group container, waiting as long as it takes, runs
    /// `performHandler` while holding it, then releases it.
    ///
    /// The handler gets `(true, nil)` when the lock is held, or `(false, error)`.
    public func withExclusiveControl(_ performHandler: @escaping @Sendable (Bool, (any Error)?) -> Void) {
        exclusiveControl(timeoutMilliseconds: -1, performHandler)
    }

    /// Like ``withExclusiveControl(_:)`` but gives up at `date`; `Date()` tries once.
    public func withExclusiveControl(
        beforeDate date: Date, perform performHandler: @escaping @Sendable (Bool, (any Error)?) -> Void
    ) {
        exclusiveControl(timeoutMilliseconds: Self.milliseconds(until: date), performHandler)
    }

    /// Runs `body` while holding exclusive control, waiting as long as it takes.
    public func withExclusiveControl<R>(_ body: () async throws -> R) async throws -> R {
        try await exclusiveControl(timeoutMilliseconds: -1, body)
    }

    /// Runs `body` while holding exclusive control, giving up at `date` (`Date()` tries once).
    public func withExclusiveControl<R>(before date: Date, _ body: () async throws -> R) async throws -> R {
        try await exclusiveControl(timeoutMilliseconds: Self.milliseconds(until: date), body)
    }

    /// The talks' spelling of ``scheduleDownload(_:)``.
    @available(*, deprecated, renamed: "scheduleDownload(_:)")
    public func schedule(_ download: BADownload) throws { try scheduleDownload(download) }

    /// The talks' one-argument handler form of ``withExclusiveControl(_:)``.
    @available(*, deprecated, message: "use withExclusiveControl(_:) with a (Bool, Error?) handler")
    public func withExclusiveControl(_ performHandler: @escaping @Sendable ((any Error)?) -> Void) {
        exclusiveControl(timeoutMilliseconds: -1) { acquired, error in performHandler(acquired ? nil : error) }
    }

    static func milliseconds(until date: Date) -> Int64 {
        max(0, Int64((date.timeIntervalSinceNow * 1000).rounded(.up)))
    }

    private func exclusiveControl(
        timeoutMilliseconds: Int64, _ handler: @escaping @Sendable (Bool, (any Error)?) -> Void
    ) {
        do {
            let connection = try connection()
            try connection.acquireExclusiveControl(timeoutMilliseconds: timeoutMilliseconds)
            handler(true, nil)
            connection.releaseExclusiveControl()
        } catch {
            handler(false, error)
        }
    }

    private func exclusiveControl<R>(timeoutMilliseconds: Int64, _ body: () async throws -> R) async throws -> R {
        let connection = try connection()
        try connection.acquireExclusiveControl(timeoutMilliseconds: timeoutMilliseconds)
        defer { connection.releaseExclusiveControl() }
        return try await body()
    }
}
