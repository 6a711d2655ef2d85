import BACore
import BAPacks
import Foundation
import Testing

/// The `language` of localized packs in the pack manifest `ba pack build` reads and in the
/// download manifest a device reads (a hostile one included).
@Suite("localized packs' manifests")
struct PackLanguageManifestTests {
    static func manifest(_ pack: String = #"{"assetPackID":"voice-fr","#, language: String) -> [UInt8] {
        Array(
            (pack
                + #""downloadPolicy":{"onDemand":{}},"fileSelectors":[{"directory":"v"}],"language":"\#(language)"}"#)
                .utf8)
    }

    @Test("ba pack build reads the language, in canonical case")
    func packManifest() throws {
        #expect(try PackManifest.parse(Self.manifest(language: "fr")).language == "fr")
        #expect(try PackManifest.parse(Self.manifest(language: "zh-hans-vn")).language == "zh-Hans-VN")
        let plain = #"{"assetPackID":"x","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}]}"#
        #expect(try PackManifest.parse(Array(plain.utf8)).language == nil)
    }

    @Test(
        "a language that is not Apple's shape is refused, saying so", arguments: ["english", "de-CH-1996", "", "fr_FR"])
    func packManifestRefuses(_ language: String) {
        #expect {
            try PackManifest.parse(Self.manifest(language: language))
        } throws: { error in
            "\(error)".contains("BCP-47")
        }
    }

    static func entry(_ id: String, language: String?) -> PackPublisher.DownloadManifest.Entry {
        .init(
            assetPackID: id, version: 1, downloadSize: 10, downloadPolicy: .onDemand,
            indexURL: "https://cdn.example.com/packs/\(id)/1.json", indexSHA256: String(repeating: "a", count: 64),
            language: language)
    }

    static func encoded(_ entries: [PackPublisher.DownloadManifest.Entry]) throws -> [UInt8] {
        let manifest = PackPublisher.DownloadManifest(
            sequence: 1, expires: "2099-01-01T00:00:00Z", apps: ["app"], assetPacks: entries)
        // As `ba pack publish` writes it (format 3: Apple's keys).
        return Array(try JSONEncoder().encode(JSONValue.object(try manifest.wireDocument())))
    }

    @Test("the download manifest carries each pack's language; one of the wrong shape refuses its pack only")
    func downloadManifest() throws {
        let decoded = try PackPublisher.DownloadManifest.decode(
            try Self.encoded([
                Self.entry("voice-en", language: "en"), Self.entry("voice-fr", language: "f!r; rm -rf"),
                Self.entry("base", language: nil),
            ]))
        let byID = Dictionary(uniqueKeysWithValues: decoded.assetPacks.map { ($0.assetPackID, $0) })
        #expect(byID["voice-en"]?.canonicalLanguage == "en")
        #expect(byID["voice-en"]?.hasValidLanguage == true)
        #expect(byID["base"]?.language == nil)
        #expect(byID["base"]?.hasValidLanguage == true)
        #expect(byID["voice-fr"]?.hasValidLanguage == false)
        #expect(byID["voice-fr"]?.canonicalLanguage == nil)
    }

    @Test(
        "a language over 35 bytes refuses the manifest (a bound); two packs of one id are refused whatever their languages"
    )
    func downloadManifestBounds() throws {
        let long = try Self.encoded([Self.entry("voice", language: String(repeating: "a", count: 36))])
        let error = #expect(throws: PackError.self) { _ = try PackPublisher.DownloadManifest.decode(long) }
        #expect(error?.operation == "language", "\(String(describing: error))")
        let twice = try Self.encoded([Self.entry("voice", language: "en"), Self.entry("voice", language: "fr")])
        let again = #expect(throws: PackError.self) { _ = try PackPublisher.DownloadManifest.decode(twice) }
        #expect(again?.operation == "id", "\(String(describing: again))")
    }
}
