import BAStore

// The transfer coordinator's reports, each handed to the service that owns what it is about.
extension BasdServices: TransferCoordinatorDelegate {
    func transfers(_ transfers: TransferCoordinator, recorded event: StoredEvent) {
        delivery.recorded(event)
        launcher?.recorded(event)
    }

    func transfers(_ transfers: TransferCoordinator, finished event: StoredEvent, path: String, sha256: String) {
        purge.track(finished: event, path: path, sha256: sha256)
    }

    func transfersHaveProgressListeners(_ transfers: TransferCoordinator) -> Bool {
        delivery.hasListeners || launcher != nil
    }

    func transfers(
        _ transfers: TransferCoordinator, progressOf download: StoredDownload, bytesWritten: Int64, totalBytes: Int64?
    ) {
        if delivery.hasListeners {
            delivery.transientProgress(of: download, bytesWritten: bytesWritten, totalBytes: totalBytes)
        }
        launcher?.progress(of: download, bytesWritten: bytesWritten, totalBytes: totalBytes)
    }

    func transfers(_ transfers: TransferCoordinator, cancelled event: WireEvent) {
        delivery.tellObservers(event)
        if let app = event.appIdentifier {
            launcher?.cancelled(app: app, uniqueIdentifier: event.downloadUniqueIdentifier)
        }
    }

    func transfers(_ transfers: TransferCoordinator, waiting event: WireEvent) {
        delivery.tellObservers(event)
    }

    func transfersNetworkChanged(_ transfers: TransferCoordinator) {
        installer.retryManifestsNow()
    }

    func transfers(_ transfers: TransferCoordinator, backgroundHoldChanged reason: NetworkConditions.Hold?) {
        packs.backgroundHoldChanged(reason)
    }

    func transfers(_ transfers: TransferCoordinator, server: String, waiting: TransferCoordinator.ServerWait?) {
        packs.serverChanged(server, waiting: waiting)
    }

    func transfers(_ transfers: TransferCoordinator, meteredChanged metered: Bool) {
        packs.meteredChanged()
    }
}
