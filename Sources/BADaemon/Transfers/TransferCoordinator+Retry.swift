import BACore
import BADaemonProtocol
import BAStore
import Foundation

// `ba retry` (executor).
extension TransferCoordinator {
    /// Tries a download again now: a failed one is made active and handed to the engine (which
    /// resumes from its partial file where its validator still matches); an active one waiting out
    /// a backoff or for space starts at once.
    func retry(_ uniqueIdentifier: String) throws {
        guard let download = try store.download(uniqueIdentifier: uniqueIdentifier) else {
            throw Refusal(
                AppleErrorCode.downloadNotScheduled.rawValue, "no download has unique identifier \(uniqueIdentifier)")
        }
        if download.state.isActive {
            perform(window.handle(.retryRequested(uniqueIdentifier, now: clock.now)))
            log("download \(uniqueIdentifier): retry now (ba retry)")
            return
        }
        guard download.state == .failed else {
            throw Refusal(
                AppleErrorCode.downloadNotScheduled.rawValue,
                "download \(uniqueIdentifier) is finished; there is nothing to retry")
        }
        let requeued = try store.requeue(uniqueIdentifier: uniqueIdentifier)
        guard engineRequest(for: requeued) != nil else {
            throw Refusal(
                .internalError, "download \(uniqueIdentifier) cannot be handed to the engine (see basd's log)")
        }
        start(requeued)
        log("download \(uniqueIdentifier) (\(download.appIdentifier) \(download.identifier)): requeued by ba retry")
    }
}

// Network changes (executor).
extension TransferCoordinator {
    /// Starts watching the kernel's network changes (call once, at start).
    func watchNetwork() {
        do {
            // Weak: the monitor's thread may outlive basd's services (an in-process test).
            networkMonitor = try NetworkChangeMonitor.start(executor: executor) { [weak self] in
                self?.networkChanged()
            }
        } catch {
            log("not watching network changes (\(error)); transfers waiting for the network retry on their backoff")
        }
    }

    /// A link, address or route came or went: every transfer waiting to retry tries now, and
    /// so do the asset-pack files waiting for a server that gave no answer (not in the window).
    func networkChanged() {
        delegate?.transfersNetworkChanged(self)
        let actions = window.handle(.networkChanged)
        if actions.isEmpty && (!serverWaits.isEmpty || backgroundSideFetches.values.contains(.waitingToRetry)) {
            log("the network changed: the servers that gave no answer are tried again now")
            engine.retryNow(nil)
        }
        perform(actions)
    }
}
