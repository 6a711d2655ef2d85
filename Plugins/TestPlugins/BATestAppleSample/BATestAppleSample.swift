// For tests only: the finished-file handler of Apple's Background Assets sample code, unchanged, as
// a new user brings it over: `import os` and a static `Logger`, the app group container's URL
// force-unwrapped, and the file moved with `replaceItemAt(_:withItemAt:)`, whose failure is only
// logged. On Linux, Foundation's replaceItemAt throws for a destination that does not exist yet
// (and swaps the files when it does), so the move fails here: basd then keeps the file for the app
// (docs/apple-api-compatibility.md). Apple's sample does not have the public "moving" log line,
// which lets a test see where the file was to go, nor the print in downloads(for:).
import BackgroundAssets
import os

extension Logger {
    static let ext = Logger(subsystem: "com.example.apple-samplecode.BackgroundDownloadHandler", category: "extension")
}

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
        Logger.ext.info("moving \(finishedDownload.identifier, privacy: .public) to \(localURL.path, privacy: .public)")
        do {
            _ = try FileManager.default.replaceItemAt(localURL, withItemAt: fileURL)
        } catch {
            Logger.ext.error("Failed to move downloaded file: \(error)")
        }
    }
}
