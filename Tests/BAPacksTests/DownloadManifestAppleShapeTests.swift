import BACore
import Foundation
import Testing

@testable import BAPacks

/// Format 3 of the download manifest, Apple's self-hosted shape (issue 35, point 3): a manifest
/// written by hand from Apple's description reads into the one model, every lie and ambiguity in
/// it is refused by the check it breaks, the replay rules hold as in format 2, and `ba pack
/// publish` writes the shape (and format 2 on request).
@Suite("download manifest in Apple's shape")
struct DownloadManifestAppleShapeTests {
    static let sha = String(repeating: "ab", count: 32)

    /// An entry as Apple's `ba-package download-manifest create` writes one, with our
    /// `indexSHA256` added; `extra` adds or replaces keys (raw JSON after a comma).
    static func entry(
        id: String = "levels", version: String = "1", downloadSize: String = "100", url: String? = nil,
        extra: String = ""
    ) -> String {
        let url = url ?? "https://cdn.example.com/game/packs/\(id)/\(version).json"
        return """
            {"id": "\(id)", "url": "\(url)", "version": \(version), "downloadSize": \(downloadSize),
             "downloadPolicy": {"prefetch": {"installationEventTypes": ["firstInstallation"]}},
             "host": {"thirdParty": {}}, "userInfo": {"tier": 1},
             "indexSHA256": "\(sha)"\(extra)}
            """
    }

    static func manifest(_ entries: [String], top: String = "") -> [UInt8] {
        Array(#"{\#(top)"assetPacks": [\#(entries.joined(separator: ","))]}"#.utf8)
    }

    @Test("written by hand in Apple's shape (no formatVersion, host, unknown keys): read into the one model")
    func handWritten() throws {
        let json = Self.manifest(
            [Self.entry(extra: ##", "futureKey": [1, 2], "language": "en""##), Self.entry(id: "extras", version: "4")],
            top: #""generator": "by hand", "#)
        let manifest = try PackPublisher.DownloadManifest.decode(json)
        #expect(manifest.formatVersion == 3 && manifest.sequence == nil && manifest.expires == nil)
        #expect(manifest.assetPacks.map(\.assetPackID) == ["levels", "extras"])
        let levels = manifest.assetPacks[0]
        #expect(levels.indexURL == "https://cdn.example.com/game/packs/levels/1.json")
        #expect(levels.version == 1 && levels.downloadSize == 100 && levels.indexSHA256 == Self.sha)
        #expect(levels.downloadPolicy == .prefetch([.firstInstallation]))
        #expect(levels.userInfo == .object(["tier": .integer(1)]))
        // Unsigned, it is read as format 1 is (no mark); signed, nothing in it is fresh.
        let input = ManifestTrust.Input(
            manifest: manifest, sha256: "s", app: "app", signed: false, now: PackMetadataBoundsTests.now, mark: nil,
            localVersions: [:])
        #expect(ManifestTrust.evaluate(input) == .success(nil))
        var signed = input
        signed.signed = true
        #expect(PackMetadataBoundsTests.code(ManifestTrust.evaluate(signed)) == 1103)
    }

    @Test(
        "lies and ambiguities in Apple's shape are refused by the check they break",
        arguments: [
            (manifest([entry(extra: #", "assetPackID": "other""#)]), "id"),
            (manifest([entry(extra: #", "indexURL": "https://cdn.example.com/game/packs/levels/1.json""#)]), "url"),
            (
                Array(
                    #"{"formatVersion": 2, "sequence": 1, "expires": "2099-01-01T00:00:00Z", "assetPacks": [\#(entry())]}"#
                        .utf8), "id"
            ),
            (manifest([entry().replacingOccurrences(of: #""id": "levels""#, with: #""assetPackID": "levels""#)]), "id"),
            (manifest([entry().replacingOccurrences(of: #"{"thirdParty": {}}"#, with: #""thirdParty""#)]), "host"),
            (manifest([entry(version: "-1", url: "https://cdn.example.com/game/packs/levels/1.json")]), "version"),
            (manifest([entry(downloadSize: "-100")]), "downloadSize"),
            (manifest([entry(downloadSize: "1e300")]), "json"),
            (manifest([entry(id: String(repeating: "a", count: 100_000))]), "id"),
            (manifest(Array(repeating: entry(), count: PackLimits.maximumPacks + 1)), "packs"),
            (manifest([entry(url: "https://cdn.example.com/game/levels.aar")]), "url"),
            (manifest([entry()], top: #""formatVersion": "3", "#), "format"),
            (manifest([entry()], top: #""formatVersion": 4, "#), "format"),
            (manifest([entry()], top: #""sequence": 3, "#), "expires"),
            (manifest([entry()], top: #""expires": "2099-01-01T00:00:00Z", "#), "sequence"),
            (manifest([entry(), entry()]), "id"),
            (Array(#"["assetPacks"]"#.utf8), "json"),
            (manifest([#""levels""#]), "json"),
            (
                manifest([
                    entry().replacingOccurrences(
                        of: #"{"tier": 1}"#, with: "\"" + String(repeating: "x", count: 17 << 20) + "\"")
                ]), "manifestSize"
            ),
        ] as [([UInt8], String)])
    func liesAreRefused(json: [UInt8], check: String) throws {
        let error = #expect(throws: PackError.self) { _ = try PackPublisher.DownloadManifest.decode(json) }
        #expect(error?.code == .invalidMetadata)
        #expect(error?.operation == check, "\(String(describing: error))")
    }

    @Test(
        "the replay rules in Apple's shape: an older signed manifest replayed is a rollback; the same sequence with other bytes a fork"
    )
    func replayInAppleShape() throws {
        func signed(_ sequence: Int, version: Int) throws -> PackPublisher.DownloadManifest {
            try PackPublisher.DownloadManifest.decode(
                Self.manifest(
                    [Self.entry(version: String(version))],
                    top: #""sequence": \#(sequence), "expires": "2099-01-01T00:00:00Z", "apps": ["app"], "#))
        }
        let mark = ManifestTrust.Mark(sequence: 7, sha256: "s7")
        func evaluate(
            _ manifest: PackPublisher.DownloadManifest, sha256: String
        ) -> Result<ManifestTrust.Mark?, ManifestRefusal> {
            ManifestTrust.evaluate(
                .init(
                    manifest: manifest, sha256: sha256, app: "app", signed: true, now: PackMetadataBoundsTests.now,
                    mark: mark, localVersions: ["levels": 2]))
        }
        #expect(try evaluate(signed(8, version: 3), sha256: "s8") == .success(.init(sequence: 8, sha256: "s8")))
        #expect(PackMetadataBoundsTests.code(evaluate(try signed(6, version: 3), sha256: "s6")) == 1106)
        #expect(PackMetadataBoundsTests.code(evaluate(try signed(7, version: 3), sha256: "other")) == 1107)
        #expect(PackMetadataBoundsTests.code(evaluate(try signed(9, version: 1), sha256: "s9")) == 1108)
        var expired = try signed(9, version: 3)
        expired.expires = "2020-01-01T00:00:00Z"
        #expect(PackMetadataBoundsTests.code(evaluate(expired, sha256: "s9")) == 1105)
    }

    @Test(
        "ba pack publish writes Apple's shape with our keys beside; --manifest-format 2 the one before; the sequence runs on across both"
    )
    func publishWritesTheShape() throws {
        let root = try PackBuildTests.Folder()
        let publish = try PackBuildTests.Folder()
        defer {
            root.remove()
            publish.remove()
        }
        try root.write(ContentDefinedChunkerTests.randomBytes(20_000, seed: 35), to: "Levels/a.bin")
        try root.write([1], to: "intro.bin")
        _ = try PackBuilder(parameters: try .init(average: 4096)).build(
            try PackBuildTests.manifest(), root: root.path, version: 1, publishDirectory: publish.path)
        let old = try PackPublisher.publish(publish.path, baseURL: "http://127.0.0.1:8000", format: 2)
        var written = try Data(contentsOf: URL(fileURLWithPath: publish.path + "/manifest.json"))
        #expect(old.formatVersion == 2 && String(decoding: written, as: UTF8.self).contains(#""assetPackID":"levels""#))
        #expect(try PackPublisher.DownloadManifest.decode(Array(written)) == old)

        let manifest = try PackPublisher.publish(publish.path, baseURL: "http://127.0.0.1:8000")
        written = try Data(contentsOf: URL(fileURLWithPath: publish.path + "/manifest.json"))
        #expect(manifest.formatVersion == 3 && manifest.sequence == 2)
        guard case .object(let top) = try JSONDecoder().decode(JSONValue.self, from: written),
            case .array(let entries)? = top["assetPacks"], case .object(let entry)? = entries.first
        else {
            Issue.record("manifest.json is not Apple's shape: \(String(decoding: written, as: UTF8.self))")
            return
        }
        #expect(top["formatVersion"] == .integer(3) && top["sequence"] == .integer(2) && top["expires"] != nil)
        let apple: Set<String> = ["id", "url", "version", "downloadSize", "downloadPolicy", "host", "indexSHA256"]
        #expect(Set(entry.keys).subtracting(["userInfo"]) == apple, "\(entry.keys)")
        #expect(
            entry["id"] == .string("levels") && entry["url"] == .string("http://127.0.0.1:8000/packs/levels/1.json"))
        #expect(entry["host"] == .object(["thirdParty": .object([:])]))
        #expect(try PackPublisher.DownloadManifest.decode(Array(written)) == manifest)
        #expect(throws: PackError.self) {
            try PackPublisher.publish(publish.path, baseURL: "http://127.0.0.1:8000", format: 1)
        }
    }
}
