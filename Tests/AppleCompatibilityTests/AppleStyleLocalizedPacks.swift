// App-side code for localized asset packs (OS 27) written the way Apple's article "Reducing
// download and storage demands with localized asset packs" and the symbol pages use the API:
// the manifest's localized packs for a language, a batch `ensureLocalAvailability(of:)` of a set,
// files read `asLocalizedFor:` a language, the app's own language and its reconciliation. It must
// compile in Swift 5 and Swift 6 language modes with no warning (AppleCompatibilityTests),
// through `import BackgroundAssets` alone.
import BackgroundAssets

struct MissingLocalizedPack: Error {
    var prefix: String
    var language: Locale.Language
}

enum LocalizedCutscene {
    /// The narration of a cutscene in one language, its captions in another: each from the
    /// localized pack that best matches its language, downloaded together.
    static func load(
        narration narrationLanguage: Locale.Language, captions captionLanguage: Locale.Language
    ) async throws -> (URL, Data) {
        let manifest = try await AssetPackManager.shared.manifest
        guard
            let narration = manifest.localizedAssetPacks(for: narrationLanguage)
                .first(where: { $0.id.hasPrefix("cutscene-narration") })
        else { throw MissingLocalizedPack(prefix: "cutscene-narration", language: narrationLanguage) }
        guard
            let captions = manifest.localizedAssetPacks(for: captionLanguage)
                .first(where: { $0.id.hasPrefix("cutscene-captions") })
        else { throw MissingLocalizedPack(prefix: "cutscene-captions", language: captionLanguage) }
        try await AssetPackManager.shared.ensureLocalAvailability(of: [narration, captions])

        let narrationURL = try AssetPackManager.shared.url(
            for: "audio/cutscene.ogg", asLocalizedFor: narrationLanguage)
        let captionData = try AssetPackManager.shared.contents(
            at: "text/cutscene.vtt", asLocalizedFor: captionLanguage)
        let descriptor = try AssetPackManager.shared.descriptor(
            for: "text/cutscene.vtt", asLocalizedFor: captionLanguage)
        try descriptor.close()
        return (narrationURL, captionData)
    }

    /// The app's own language setting: nil reverts to the system's preferred languages; nothing
    /// changes on disk until the packs are reconciled.
    static func choose(_ language: Locale.Language?) async throws {
        AssetPackManager.shared.resolvedLanguage = language
        try await AssetPackManager.shared.reconcilePreferredLanguages()
        let local = await AssetPackManager.shared.locallyAvailableLanguages
        let manifest = try await AssetPackManager.shared.manifest
        print(
            AssetPackManager.shared.resolvedLanguage?.minimalIdentifier ?? "system", local.count,
            manifest.availableLanguages.count, manifest.resolvedLanguage as Any,
            manifest.localizedAssetPacks.map { ($0.id, $0.language as Any) })
    }

    /// The extension is asked again when the app's language changes.
    static func isLanguageChange(_ request: BAContentRequest) -> Bool {
        switch request {
        case .languageChange: true
        default: false
        }
    }
}
