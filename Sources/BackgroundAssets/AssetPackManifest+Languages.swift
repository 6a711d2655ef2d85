internal import BACore
import Foundation

// Localized asset packs in a manifest (Apple's OS 27 members of `AssetPackManifest`).
extension AssetPackManifest {
    /// The languages for which asset packs in this manifest are localized.
    public var availableLanguages: [Locale.Language] {
        Self.tags(of: assetPacks).map(Locale.Language.init(identifier:))
    }

    /// The language that best matches current preferences and for which a localized asset pack is
    /// available locally.
    ///
    /// The preferred languages inform the choice of resolved language, respecting any language
    /// that your app sets manually by setting ``AssetPackManager/resolvedLanguage``. This property
    /// may be `nil` if no localized asset packs are available. If the preferred languages changed
    /// recently or if this manifest is outdated, then this property's value may be out of sync
    /// with the set of asset packs that are available locally.
    ///
    /// On Linux: the language basd chose for the app when it gave this manifest
    /// (``AssetPackManager/manifest``); for a manifest read by the app itself, the best match of
    /// this process's preferred languages (`LANGUAGE`, `LC_ALL`, `LC_MESSAGES`, `LANG`) among
    /// ``availableLanguages``.
    public var resolvedLanguage: Locale.Language? {
        if let chosenLanguage { return chosenLanguage }
        let preferred = PackLanguage.preferred(environment: ProcessInfo.processInfo.environment)
        return PackLanguage.resolve(available: Self.tags(of: assetPacks), preferred: preferred)
            .map(Locale.Language.init(identifier:))
    }

    /// The subset of asset packs in this manifest that best match the current preferred languages
    /// (those localized for ``resolvedLanguage``).
    public var localizedAssetPacks: Set<AssetPack> {
        guard let tag = resolvedLanguage?.packTag else { return [] }
        return assetPacks.filter { $0.language?.packTag == tag }
    }

    /// Returns the subset of asset packs in this manifest that are available to download and that
    /// best match the specified language.
    ///
    /// Depending on which languages are available, the returned asset packs' respective
    /// languages may not exactly match the specified language: the exact language first, then
    /// its base language (`en-GB` → `en`, else another region of it such as `en-US`). Empty when
    /// no localized pack matches.
    ///
    /// - Parameter language: The language.
    /// - Returns: The localized asset packs.
    public func localizedAssetPacks(for language: Locale.Language) -> Set<AssetPack> {
        guard let wanted = language.packTag,
            let tag = PackLanguage.resolve(available: Self.tags(of: assetPacks), preferred: [wanted], fallsBack: false)
        else { return [] }
        return assetPacks.filter { $0.language?.packTag == tag }
    }

    /// The canonical BCP-47 tags of the packs' languages, each once, sorted.
    static func tags(of packs: some Sequence<AssetPack>) -> [String] {
        Set(packs.compactMap { $0.language?.packTag }).sorted()
    }
}

extension Locale.Language {
    /// The language as a canonical BCP-47 tag (`en-GB`, `zh-Hant-TW`), as basd and the
    /// manifests write it; nil when it has no language code. Foundation fills in a language's
    /// likely script (`fr` has `Latn`): the script is kept only when it is not the language's
    /// own likely one (`zh-Hant`, `sr-Latn`; `fr`, not `fr-Latn`).
    var packTag: String? {
        guard let code = languageCode?.identifier else { return nil }
        let likely = Locale.Language(identifier: code).script?.identifier
        let own = script?.identifier
        let parts = [code, own == likely ? nil : own, region?.identifier].compactMap { $0 }
        return PackLanguage.canonical(parts.joined(separator: "-"))
    }
}
