import Foundation
import Testing

@testable import BackgroundAssets

/// `AssetPackManifest`'s localized members (OS 27) on a manifest of packs in three languages and
/// one that is not localized.
@Suite("AssetPackManifest's languages")
struct AssetPackManifestLanguageTests {
    static let packs: Set<AssetPack> = [
        AssetPack(id: "voice-en-us", version: 1, downloadSize: 10, language: Locale.Language(identifier: "en-US")),
        AssetPack(id: "voice-fr", version: 1, downloadSize: 10, language: Locale.Language(identifier: "fr")),
        AssetPack(id: "voice-zh-hant", version: 1, downloadSize: 10, language: Locale.Language(identifier: "zh-Hant")),
        AssetPack(id: "base", version: 1, downloadSize: 10),
    ]

    static func ids(_ packs: Set<AssetPack>) -> [String] { packs.map(\.id).sorted() }

    @Test("availableLanguages lists each language once; localizedAssetPacks(for:) takes the best match")
    func languages() {
        let manifest = AssetPackManifest(assetPacks: Self.packs)
        #expect(manifest.availableLanguages.compactMap(\.packTag) == ["en-US", "fr", "zh-Hant"])
        #expect(Self.ids(manifest.localizedAssetPacks(for: Locale.Language(identifier: "fr"))) == ["voice-fr"])
        // The base language's other region: en-GB → en-US.
        #expect(Self.ids(manifest.localizedAssetPacks(for: Locale.Language(identifier: "en-GB"))) == ["voice-en-us"])
        #expect(Self.ids(manifest.localizedAssetPacks(for: Locale.Language(identifier: "fr-CA"))) == ["voice-fr"])
        #expect(
            Self.ids(manifest.localizedAssetPacks(for: Locale.Language(identifier: "zh-Hant-TW"))) == ["voice-zh-hant"])
        #expect(manifest.localizedAssetPacks(for: Locale.Language(identifier: "ja")).isEmpty)
    }

    @Test("resolvedLanguage is basd's choice when it gave one; localizedAssetPacks are that language's")
    func resolved() {
        let manifest = AssetPackManifest(assetPacks: Self.packs, resolvedLanguage: Locale.Language(identifier: "fr"))
        #expect(manifest.resolvedLanguage?.packTag == "fr")
        #expect(Self.ids(manifest.localizedAssetPacks) == ["voice-fr"])
        let none = AssetPackManifest(assetPacks: [AssetPack(id: "base", version: 1, downloadSize: 1)])
        #expect(none.resolvedLanguage == nil)
        #expect(none.availableLanguages.isEmpty)
        #expect(none.localizedAssetPacks.isEmpty)
    }

    @Test(
        "a Locale.Language as the tag basd compares: the likely script left out",
        arguments: [
            ("fr", "fr"), ("en-US", "en-US"), ("en_GB", "en-GB"), ("zh-Hant", "zh-Hant"), ("zh-Hant-TW", "zh-Hant-TW"),
            ("sr-Latn", "sr-Latn"), ("es-419", "es-419"),
        ])
    func tags(_ identifier: String, _ tag: String) {
        #expect(Locale.Language(identifier: identifier).packTag == tag)
    }

    @Test("AssetPack.language survives Codable, and a pack encoded without it decodes as not localized")
    func codable() throws {
        let pack = AssetPack(
            id: "voice-fr", version: 2, downloadSize: 3, language: Locale.Language(identifier: "fr-CA"))
        let decoded = try JSONDecoder().decode(AssetPack.self, from: JSONEncoder().encode(pack))
        #expect(decoded.language?.packTag == "fr-CA")
        let old = try JSONDecoder().decode(
            AssetPack.self, from: Data(#"{"id":"a","version":1,"downloadSize":1}"#.utf8))
        #expect(old.language == nil)
    }
}
