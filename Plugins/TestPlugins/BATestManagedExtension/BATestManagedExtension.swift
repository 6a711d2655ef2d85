// For tests only: a ManagedDownloaderExtension (exported by @main) that declines the asset pack
// "extras" and wants every other one, logging each answer through the host.
import BackgroundAssets
import ExtensionFoundation

@main
struct BATestManagedExtension: ManagedDownloaderExtension {
    func shouldDownload(_ assetPack: AssetPack) -> Bool {
        let answer = assetPack.id != "extras"
        let userInfo = assetPack.userInfo.map { String(decoding: $0, as: UTF8.self) } ?? "nil"
        BAHostLog(
            "shouldDownload \(assetPack.id) \(assetPack.version) \(assetPack.downloadSize) \(userInfo): \(answer)")
        return answer
    }
}
