import Foundation

/// A manifest of asset packs that are available to download (Apple's `AssetPackManifest`).
///
/// ``AssetPackManager/manifest`` gives the app's managed manifest as basd last read it.
public struct AssetPackManifest: Sendable {
    /// The asset packs in this manifest that are available to download.
    public let assetPacks: Set<AssetPack>

    /// The language basd chose for the app's localized packs when it gave this manifest (nil: not
    /// known; ``resolvedLanguage`` then reads the preferred languages of this process).
    let chosenLanguage: Locale.Language?

    /// A manifest of the given packs.
    init(assetPacks: Set<AssetPack>, resolvedLanguage: Locale.Language? = nil) {
        self.assetPacks = assetPacks
        self.chosenLanguage = resolvedLanguage
    }

    /// Returns the asset pack with the given ID, or nil when this manifest does not list it.
    public func assetPack(withID assetPackID: String) -> AssetPack? {
        assetPacks.first { $0.id == assetPackID }
    }
}
