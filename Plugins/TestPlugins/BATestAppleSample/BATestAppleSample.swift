// For tests only: the finished-file handler of Apple's Background Assets sample code, unchanged, as
// a new user brings it over: the app group container's URL force-unwrapped, and the file moved with
// `replaceItemAt(_:withItemAt:)`, whose failure is only logged. On Linux, swift-corelibs-foundation
// refuses a destination that does not exist yet, so the first move of each file fails here: basd
// then keeps the file for the app (docs/apple-api-compatibility.md).
import BackgroundAssets

@main
struct BackgroundDownloadHandler: BADownloaderExtension {
    func downloads(
        for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo
    ) -> Set<BADownload> {
        // Not in Apple's sample: print, whose line must reach the call's output (stdout to a pipe
        // is fully buffered, and the runner ends with _exit).
        print("downloads(for:) was called")
        return []
    }

    func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL) {
        let appGroupContainer = FileManager.default.containerURL(
            forSecurityApplicationGroupIdentifier: finishedDownload.applicationGroupIdentifier)!
        let localURL = appGroupContainer.appendingPathComponent(finishedDownload.identifier)
        do {
            _ = try FileManager.default.replaceItemAt(localURL, withItemAt: fileURL)
            print("moved \(finishedDownload.identifier) to \(localURL.path)")
        } catch {
            print("failed to move the downloaded file: \(error)")
        }
    }
}
