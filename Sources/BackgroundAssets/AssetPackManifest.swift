import Foundation

/// A manifest of asset packs that are available to download (Apple's `AssetPackManifest`).
///
/// ``AssetPackManager/manifest`` gives the app's managed manifest as basd last read it.
public struct AssetPackManifest: Sendable {
    /// The asset packs in this manifest that are available to download.
    public let assetPacks: Set<AssetPack>

    /// A manifest of the given packs.
    init(assetPacks: Set<AssetPack>) {
        self.assetPacks = assetPacks
    }

    /// Returns the asset pack with the given ID, or nil when this manifest does not list it.
    public func assetPack(withID assetPackID: String) -> AssetPack? {
        assetPacks.first { $0.id == assetPackID }
    }
}
