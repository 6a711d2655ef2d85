import BACore
import BADaemonProtocol
import BAStore

/// What the ``EventRouter`` does to transfers when an extension answered an event (the
/// ``TransferCoordinator`` conforms): a credential answer, the downloads the extension scheduled
/// and cancelled. A test gives the router a fake without an engine. Executor only.
protocol EventTransfers: AnyObject {
    /// Answers the credential challenge of the transfer `uniqueIdentifier` (`disposition` as
    /// `URLSession.AuthChallengeDisposition`: 0 uses `user` and `password`).
    func respond(to uniqueIdentifier: String, disposition: Int, user: String?, password: String?)

    /// Checks and stores a download of `app` (see ``TransferCoordinator/schedule(_:for:contentRequest:start:)``);
    /// with `start` false, ``start(_:)`` hands it to the engine once the caller's batch is committed.
    @discardableResult
    func schedule(
        _ payload: DownloadDescription, for app: StoredApp, contentRequest: Int32?, start: Bool
    ) throws
        -> StoredDownload

    /// Hands a stored download to the engine (or queues it for the engine's window).
    func start(_ stored: StoredDownload)

    /// Cancels the downloads of `app` an extension cancelled; returns the identifiers cancelled.
    @discardableResult
    func applyCancellations(_ identifiers: [String], of app: String) -> [String]
}

extension TransferCoordinator: EventTransfers {}
