import BADaemonProtocol
import BAStore
import Foundation

// What a cancel leaves behind (executor): its row is gone with it, so basd remembers it a while.
extension TransferCoordinator {
    /// Remembers a cancel (the last 1 000) and tells the CLI observers (`ba events --follow`, a
    /// waiting `ba install`) with a transient `failed` event: NSURLErrorCancelled (-999).
    func noteCancelled(_ download: StoredDownload, by: String) {
        if cancelledLately.count >= 1_000 { cancelledLately.removeAll() }
        let time = LogFormat.timestamp(clock.now)
        cancelledLately[download.uniqueIdentifier] =
            "download \(download.uniqueIdentifier) (\(download.appIdentifier) \(download.identifier)) was cancelled by \(by) at \(time)"
        let event = WireEvent(
            sequence: 0, downloadUniqueIdentifier: download.uniqueIdentifier, identifier: download.identifier,
            change: .failed(domain: DownloadFailure.urlDomain, code: -999, message: "cancelled by \(by)"),
            appIdentifier: download.appIdentifier)
        delegate?.transfers(self, cancelled: event)
    }

    /// What basd remembers of a recent cancel of `uniqueIdentifier`, or nil.
    func recentlyCancelled(_ uniqueIdentifier: String) -> String? { cancelledLately[uniqueIdentifier] }
}
