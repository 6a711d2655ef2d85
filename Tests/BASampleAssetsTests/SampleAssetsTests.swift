import BASampleAssets
import CCrypto
import Foundation
import Testing

/// The sample app's asset set: the generator, and every entry of the catalogs and manifests in
/// `Examples/` against the bytes they stand for.
@Suite struct SampleAssetsTests {
    /// The package root, found from this file (Tests/BASampleAssetsTests/…).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let examples = packageRoot.appendingPathComponent("Examples")
    static let assets = examples.appendingPathComponent("SampleApp/assets")

    static func sha256(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let context = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(context) }
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
        bytes.withUnsafeBytes { _ = EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
        EVP_DigestFinal_ex(context, &digest, &length)
        return digest.prefix(Int(length)).map { String(format: "%02x", $0) }.joined()
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    static func entries(of url: URL) throws -> [[String: Any]] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url))
        let document = try #require(object as? [String: Any], "\(url.path) is not a JSON object")
        return try #require(document["assets"] as? [[String: Any]], "\(url.path) has no assets array")
    }

    @Test func generatorIsSplitMix64() {
        // The first 16 bytes for seed 1, from an independent implementation of the documented
        // algorithm (Python).
        #expect(Self.hex(SampleAssets.bytes(seed: 1, size: 16)) == "c15c0289ec2d0a9167ec8e65a18debbe")
        #expect(SampleAssets.bytes(seed: 1, size: 5) == Array(SampleAssets.bytes(seed: 1, size: 16).prefix(5)))
        #expect(SampleAssets.bytes(seed: 1, size: 0).isEmpty)
        #expect(SampleAssets.bytes(seed: -1, size: 3).count == 3)
        #expect(SampleAssets.bytes(seed: 1, size: 64) != SampleAssets.bytes(seed: 2, size: 64))
    }

    /// Every catalog and manifest in Examples: a `generate` entry's fileSize and sha256 are those
    /// of the generator's output; an entry served from `assets/` matches the committed file.
    @Test func everyEntryMatchesItsBytes() throws {
        let files = try #require(FileManager.default.enumerator(at: Self.examples, includingPropertiesForKeys: nil))
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "json" }
        var checked = 0
        for file in files {
            // Only documents with an asset list (the packs' manifests and content.json have none:
            // SamplePackContentTests checks them).
            let document = try? JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]
            guard document?["assets"] != nil, let entries = try? Self.entries(of: file) else { continue }
            for entry in entries {
                let identifier = entry["identifier"] as? String ?? "?"
                let what = "\(file.lastPathComponent): \(identifier)"
                let bytes: [UInt8]
                if let generate = entry["generate"] as? [String: Any] {
                    let seed = try #require(generate["seed"] as? Int, "\(what): generate.seed")
                    let size = try #require(generate["size"] as? Int, "\(what): generate.size")
                    bytes = SampleAssets.bytes(seed: seed, size: size)
                    #expect(entry["sha256"] != nil, "\(what): a generated entry names its sha256")
                } else if let local = Self.committedFile(entry["url"] as? String ?? "") {
                    bytes = Array(try Data(contentsOf: local))
                } else {
                    continue  // a remote URL (Examples/Manifests/sample-manifest.json)
                }
                if let size = entry["fileSize"] as? Int { #expect(size == bytes.count, "\(what): fileSize") }
                if let hash = entry["sha256"] as? String { #expect(hash == Self.sha256(bytes), "\(what): sha256") }
                checked += 1
            }
        }
        #expect(checked >= 6, "the sample catalog and manifest template were checked")
    }

    /// The committed file an entry's URL names: relative to `assets/` (a catalog's relative URL
    /// is resolved against the catalog's own URL, at the root), or after `{{BASE_URL}}/`.
    static func committedFile(_ url: String) -> URL? {
        let relative: String
        if url.hasPrefix("{{BASE_URL}}/") {
            relative = String(url.dropFirst("{{BASE_URL}}/".count))
        } else if !url.contains("://") {
            relative = url
        } else {
            return nil
        }
        let file = assets.appendingPathComponent(relative)
        return FileManager.default.fileExists(atPath: file.path) ? file : nil
    }

    @Test func theSampleAssetSet() throws {
        let template = try Self.entries(of: Self.examples.appendingPathComponent("SampleApp/manifest.template.json"))
        let catalog = try Self.entries(of: Self.assets.appendingPathComponent("catalog.json"))
        let manifestIdentifiers = template.compactMap { $0["identifier"] as? String }
        let catalogIdentifiers = catalog.compactMap { $0["identifier"] as? String }
        #expect(manifestIdentifiers == ["catalog", "level-1", "intro-movie"])
        #expect(catalogIdentifiers == ["level-2", "level-3", "soundtrack"])
        // The essentials are the catalog and level-1, each with its exact size (essential needs it).
        let essential = template.filter { $0["essential"] as? Bool == true }
        #expect(essential.compactMap { $0["identifier"] as? String } == ["catalog", "level-1"])
        #expect(essential.allSatisfy { $0["fileSize"] is Int })
        // Every manifest URL starts with the placeholder; every catalog URL is relative, and every
        // entry is either generated or committed.
        #expect(template.allSatisfy { ($0["url"] as? String)?.hasPrefix("{{BASE_URL}}/") == true })
        #expect(catalog.allSatisfy { ($0["url"] as? String)?.contains("://") == false })
        for entry in template + catalog {
            #expect(
                entry["generate"] != nil || Self.committedFile(entry["url"] as? String ?? "") != nil,
                "\(entry["identifier"] ?? "?") has no bytes")
        }
        // The catalog keeps its title.
        let document = try JSONSerialization.jsonObject(
            with: Data(contentsOf: Self.assets.appendingPathComponent("catalog.json")))
        #expect((document as? [String: Any])?["title"] as? String == "Sample catalog")
    }
}
