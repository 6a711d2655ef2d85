// A downloader extension written as Apple developers write one for Apple's framework, from the
// BackgroundAssets documentation and the WWDC22/WWDC23 sessions' code: one import, `@main`,
// essential downloads on install and update, the failed-essential re-queue, and finished files
// moved into the app group container under exclusive control, and logging with `import os` and a
// static `Logger`. It must compile unchanged here in Swift 5 and Swift 6 language modes
// (AppleCompatibilityTests checks both) and run under the host.
import BackgroundAssets
import os

extension Logger {
    static let ext = Logger(subsystem: "com.example.applestyle.downloader", category: "extension")
}

@main
struct AppleStyleDownloader: BADownloaderExtension {
    struct ManifestEntry: Decodable {
        let identifier: String
        let url: String
        let size: Int
        let essential: Bool
    }

    let appGroupIdentifier = "group.com.example.applestyle"

    func downloads(
        for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo
    ) -> Set<BADownload> {
        guard let data = try? Data(contentsOf: manifestURL),
            let entries = try? JSONDecoder().decode([ManifestEntry].self, from: data)
        else { return [] }
        var downloads = Set<BADownload>()
        for entry in entries {
            guard let url = URL(string: entry.url) else { continue }
            // Essential downloads are only allowed when the app is installed or updated.
            let essential = entry.essential && (request == .install || request == .update)
            let download = BAURLDownload(
                identifier: entry.identifier, request: URLRequest(url: url), essential: essential,
                fileSize: entry.size, applicationGroupIdentifier: appGroupIdentifier,
                priority: essential ? .max : .default)
            downloads.insert(download)
        }
        return downloads
    }

    func backgroundDownload(_ failedDownload: BADownload, failedWithError error: Error) {
        // The app can't launch without an essential download: try again in the background.
        guard failedDownload.isEssential else { return }
        do {
            try BADownloadManager.shared.scheduleDownload(failedDownload.removingEssential())
        } catch {
            Logger.ext.error("Failed to re-queue \(failedDownload.identifier, privacy: .public): \(error)")
        }
    }

    func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL) {
        BADownloadManager.shared.withExclusiveControl { acquired, error in
            guard acquired,
                let container = FileManager.default.containerURL(
                    forSecurityApplicationGroupIdentifier: finishedDownload.applicationGroupIdentifier)
            else {
                Logger.ext.error("No exclusive control or container: \(String(describing: error))")
                return
            }
            Logger.ext.debug("Moving \(finishedDownload.identifier, privacy: .public) into the app group")
            let destination = container.appendingPathComponent(finishedDownload.identifier)
            do {
                // Works on Apple's systems and on Linux, where Foundation's replaceItemAt is broken
                // (docs/apple-api-compatibility.md): the app reads the folder only under exclusive
                // control, so the moment without a file is never seen.
                if FileManager.default.fileExists(atPath: destination.path) {
                    try FileManager.default.removeItem(at: destination)
                }
                try FileManager.default.moveItem(at: fileURL, to: destination)
            } catch {
                Logger.ext.error("Failed to move downloaded file: \(error)")
            }
        }
    }

    func backgroundDownload(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        (.performDefaultHandling, nil)
    }
}
