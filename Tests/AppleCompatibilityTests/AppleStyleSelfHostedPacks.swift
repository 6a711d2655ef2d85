// Asset packs an app hosts and manages itself (Apple's OS 26 self-hosted `AssetPackManifest`),
// written as Apple's symbol pages describe them: an unmanaged `BADownloaderExtension` reads the
// manifest the system hands it and returns `allDownloads(for:)` of it, and the app schedules the
// downloads itself (`allDownloads(for: nil)`, `AssetPack.download(for: nil)`). It must compile
// unchanged in Swift 5 and Swift 6 language modes with no warning (AppleCompatibilityTests),
// through `import BackgroundAssets` alone.
import BackgroundAssets

/// The extension: every applicable pack of the manifest, for the request it is called for.
struct SelfHostedPacksDownloader: BADownloaderExtension {
    static let appGroupID = "group.com.example.applestyle"

    func downloads(
        for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo
    ) -> Set<BADownload> {
        do {
            let manifest = try AssetPackManifest(contentsOf: manifestURL, appGroupID: Self.appGroupID)
            return manifest.allDownloads(for: request)
        } catch {
            return []
        }
    }

    func backgroundDownload(_ failedDownload: BADownload, failedWithError error: any Error) {
        guard failedDownload.isEssential else { return }
        // Try again in the background, as any failed essential download.
        try? BADownloadManager.shared.scheduleDownload(failedDownload.removingEssential())
    }
}

/// The app: the same manifest, read from data it fetched, scheduled without a content request.
enum SelfHostedPacksApp {
    static func scheduleAll(manifestData: Data) throws -> Int {
        let manifest = try AssetPackManifest(from: manifestData, appGroupID: SelfHostedPacksDownloader.appGroupID)
        let downloads = manifest.allDownloads(for: nil)
        for download in downloads {
            try BADownloadManager.shared.scheduleDownload(download)
        }
        return downloads.count
    }

    /// An on-demand pack, now, in the foreground.
    static func fetchNow(_ assetPackID: String, from manifest: AssetPackManifest) throws {
        guard let pack = manifest.assetPack(withID: assetPackID) else { return }
        let download: BADownload = pack.download(for: nil)
        try BADownloadManager.shared.startForegroundDownload(download)
    }
}
