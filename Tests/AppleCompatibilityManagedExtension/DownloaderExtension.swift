// Apple's managed downloader extension, exactly as Apple's documentation ("Creating managed asset
// packs") and Xcode's "Self-Hosted, Managed" template write it. Not edited: it must compile here
// unchanged (Swift 5 mode in this target; the compatibility tests type-check it in Swift 6 too).
import BackgroundAssets
import ExtensionFoundation

@main
struct DownloaderExtension: ManagedDownloaderExtension {
    func shouldDownload(_ assetPack: AssetPack) -> Bool {
        // Custom logic: which packs do we actually want on this device?
        return true
    }
}
