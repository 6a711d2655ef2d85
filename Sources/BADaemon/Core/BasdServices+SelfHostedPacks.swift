import BADaemonProtocol
import BAStore

// Self-hosted asset pack downloads (issue 35): the transfer coordinator's window starts and stops
// them, the pack service installs them, and what it reports goes back to the coordinator, which
// records it as a transfer's. Each report is taken in a turn of its own, after the one that made
// it: the window is never fed while it is carrying out its own actions.
extension BasdServices {
    func transfers(_ transfers: TransferCoordinator, startPack download: StoredDownload) {
        let app: StoredApp?
        do { app = try store.app(download.appIdentifier) } catch {
            report(download.uniqueIdentifier, .failed(PackFailure("basd could not read the app: \(error)")))
            return
        }
        guard let app else {
            report(
                download.uniqueIdentifier,
                .failed(PackFailure("\(download.appIdentifier) is no longer registered with basd")))
            return
        }
        packs.startSelfHosted(download, app: app)
    }

    func transfers(_ transfers: TransferCoordinator, stopPack uniqueIdentifier: String) {
        packs.stopSelfHosted(uniqueIdentifier)
    }

    func packs(_ service: PackService, selfHostedDownload uniqueIdentifier: String, report: SelfHostedPackReport) {
        self.report(uniqueIdentifier, report)
    }

    private func report(_ uniqueIdentifier: String, _ report: SelfHostedPackReport) {
        executor.async { [self] in transfers.packDownload(uniqueIdentifier, report: report) }
    }
}
