import BAStore
import Foundation

// Dropping an uninstalled app's transfers (executor).
extension TransferCoordinator {
    /// Stops the engine's transfers of `downloads` and deletes their partial files; the store
    /// rows are the caller's to remove. Late engine events of these transfers find no row and are
    /// dropped.
    func drop(_ downloads: [StoredDownload]) {
        for download in downloads {
            progress[download.uniqueIdentifier] = nil
            perform(window.handle(.dropped(download.uniqueIdentifier)), row: download)
        }
    }
}
