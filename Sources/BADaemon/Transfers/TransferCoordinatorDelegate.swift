import BADaemonProtocol
import BAStore

/// What the ``TransferCoordinator`` reports to the services above it, as async-http-client's
/// `HTTPConnectionPool` reports to its manager through `HTTPConnectionPoolDelegate`: the
/// coordinator knows no other service. basd's composition root (``BasdServices``) is the delegate
/// and hands each report to the service that owns what it is about (the ``EventRouter``, the
/// ``PurgeService``, the ``AppInstaller``). Every method is called on the executor.
protocol TransferCoordinatorDelegate: AnyObject {
    /// A download's event was recorded and its transaction committed: route it to the app, its
    /// extension and the observers.
    func transfers(_ transfers: TransferCoordinator, recorded event: StoredEvent)

    /// A download's file is complete at `path` (its `finished` event is being recorded): a file
    /// that may be purged later, unless the app changes it.
    func transfers(_ transfers: TransferCoordinator, finished event: StoredEvent, path: String, sha256: String)

    /// Whether anyone listens for progress between two durable records now; when nobody does,
    /// the coordinator neither reads the download's row for it nor reports it.
    func transfersHaveProgressListeners(_ transfers: TransferCoordinator) -> Bool

    /// Progress between two durable records (sent after the batch it arrived in is committed,
    /// never stored).
    func transfers(
        _ transfers: TransferCoordinator, progressOf download: StoredDownload, bytesWritten: Int64, totalBytes: Int64?)

    /// A download was cancelled and its row is gone: `event` is the transient `failed` event
    /// (NSURLErrorCancelled) for the CLI observers.
    func transfers(_ transfers: TransferCoordinator, cancelled event: WireEvent)

    /// A transfer's attempt failed and it waits to retry: `event` is the transient `waiting` event
    /// (the reason, the next attempt's time) for the CLI observers; apps never see it.
    func transfers(_ transfers: TransferCoordinator, waiting event: WireEvent)

    /// A link, address or route came or went: what waits for the network may try now (the
    /// transfers waiting to retry are told after this).
    func transfersNetworkChanged(_ transfers: TransferCoordinator)

    /// What holds background transfers changed (Low Power Mode, a metered network, restricted
    /// connectivity; nil: nothing): non-essential asset packs wait for the same.
    func transfers(_ transfers: TransferCoordinator, backgroundHoldChanged reason: NetworkConditions.Hold?)

    /// `server` gives no answer (`waiting`: why, the next try; told again after each failed
    /// try), or answers again (nil): asset packs fetching from it wait for it, or go on.
    func transfers(_ transfers: TransferCoordinator, server: String, waiting: TransferCoordinator.ServerWait?)

    /// NetworkManager says the network is metered now, or no longer: asset packs that need
    /// consent to fetch on it (``PackConsent``) wait, or go on.
    func transfers(_ transfers: TransferCoordinator, meteredChanged metered: Bool)

    /// A self-hosted asset pack download's turn came (the window started it): the pack service
    /// installs the pack and reports through ``TransferCoordinator/packDownload(_:report:)``.
    func transfers(_ transfers: TransferCoordinator, startPack download: StoredDownload)

    /// A self-hosted asset pack download was stopped (cancelled, or put back in the queue): its
    /// pack's job stops.
    func transfers(_ transfers: TransferCoordinator, stopPack uniqueIdentifier: String)
}

extension TransferCoordinatorDelegate {
    func transfers(_ transfers: TransferCoordinator, meteredChanged metered: Bool) {}
    func transfers(_ transfers: TransferCoordinator, server: String, waiting: TransferCoordinator.ServerWait?) {}
    func transfers(_ transfers: TransferCoordinator, startPack download: StoredDownload) {}
    func transfers(_ transfers: TransferCoordinator, stopPack uniqueIdentifier: String) {}
}
