// For tests only: an unmanaged (self-hosted) downloader extension as Apple's OS 26 documentation
// has one written: it reads the manifest file the system gives it with
// `AssetPackManifest(contentsOf:appGroupID:)` and returns `allDownloads(for:)`; the system
// installs each pack into the app group. It logs through the host what it returned and each
// download's end, for the test to read.
import BackgroundAssets
import ExtensionFoundation
import Foundation

@main
struct BATestSelfHostedPacks: BADownloaderExtension {
    /// The test app's group (PackFixture.group), written as an app's code writes its own.
    static let appGroupID = "group.com.example.packs"

    func downloads(
        for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo
    ) -> Set<BADownload> {
        do {
            let manifest = try AssetPackManifest(contentsOf: manifestURL, appGroupID: Self.appGroupID)
            let downloads = manifest.allDownloads(for: request)
            let listed = downloads.map { "\($0.identifier)\($0.isEssential ? "!" : "")" }.sorted()
            BAHostLog("self-hosted downloads: \(listed.joined(separator: ","))")
            return downloads
        } catch {
            BAHostLog("self-hosted manifest refused: \(error)")
            return []
        }
    }

    func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL) {
        BAHostLog("self-hosted finished: \(finishedDownload.identifier) at \(fileURL.path)")
    }

    func backgroundDownload(_ failedDownload: BADownload, failedWithError error: any Error) {
        BAHostLog("self-hosted failed: \(failedDownload.identifier): \(error)")
    }
}
