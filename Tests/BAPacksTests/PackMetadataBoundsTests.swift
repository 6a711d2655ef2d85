import Foundation
import Testing

@testable import BAPacks

/// Pack metadata from the network is checked against ``PackLimits`` before it is believed: each
/// lie of issue 33's hostile CDN (a 1 TiB chunk, two chunks of 2^62 bytes, a bundle of −1 chunks,
/// a manifest's download size of −5 or 2^50, …) is refused by the decoder with the check it
/// broke, never an allocation, a trap or a plan; and the manifest's replay rules (``ManifestTrust``)
/// as a table.
@Suite("pack metadata bounds and trust")
struct PackMetadataBoundsTests {
    static let sha = String(repeating: "a", count: 64)
    static let otherSHA = String(repeating: "b", count: 64)

    /// An index's JSON with the given files (`path`, `size`, chunks as (sha, length, stored)) and bundles.
    static func indexJSON(
        files: [(String, Int64, [(String, Int64, Int64)])], bundles: [(String, Int64, Int)]? = nil, version: Int = 1
    ) -> [UInt8] {
        let fileText = files.map { path, size, chunks in
            let chunkText = chunks.map { #"{"sha256":"\#($0.0)","length":\#($0.1),"storedLength":\#($0.2)}"# }
            return
                #"{"path":"\#(path)","size":\#(size),"mode":420,"sha256":"\#(sha)","chunks":[\#(chunkText.joined(separator: ","))]}"#
        }
        let bundleText = bundles.map { list in
            #","bundles":["#
                + list.map { #"{"path":"\#($0.0)","size":\#($0.1),"chunks":\#($0.2)}"# }.joined(separator: ",") + "]"
        }
        return Array(
            (#"{"formatVersion":1,"id":"levels","version":\#(version),"downloadPolicy":{"onDemand":{}},"#
                + #""chunking":{"minimum":1024,"average":4096,"maximum":16384},"files":["#
                + fileText.joined(separator: ",") + "]" + (bundleText ?? "") + "}").utf8)
    }

    static func refusal(_ bytes: [UInt8]) -> PackError? {
        do {
            _ = try PackIndex.decode(bytes)
            return nil
        } catch {
            return error
        }
    }

    @Test("a sound index decodes, and its plan and bundles add up")
    func aSoundIndexDecodes() throws {
        let index = try PackIndex.decode(
            Self.indexJSON(
                files: [("a/b.bin", 30, [(Self.sha, 10, 6), (Self.otherSHA, 20, 9)]), ("c", 10, [(Self.sha, 10, 6)])],
                bundles: [("packs/levels/1-0.bundle", 15, 2)]))
        #expect(index.downloadSize == 15)
        #expect(index.bundleLayout?[Self.otherSHA]?.offset == 6)
        #expect(PackPlan(target: index, installed: nil).fetchStoredBytes == 15)
    }

    @Test(
        "each lie is refused by the check it breaks",
        arguments: [
            // The issue's three: a 1 TiB chunk, two of 2^62 bytes, a bundle of -1 chunks.
            (indexJSON(files: [("a", 1 << 40, [(sha, 1 << 40, 20)])]), "chunkLength"),
            (
                indexJSON(files: [("a", Int64.max, [(sha, 1 << 62, 20), (otherSHA, 1 << 62, 20)])]),
                "chunkLength"
            ),
            (
                indexJSON(files: [("a", 10, [(sha, 10, 6)])], bundles: [("packs/levels/1-0.bundle", 6, -1)]),
                "bundleChunks"
            ),
            // A frame longer than zstd's bound for its chunk (a 512 MiB allocation for a 16 KiB download).
            (indexJSON(files: [("a", 10, [(sha, 10, 512 << 20)])]), "chunkLength"),
            (indexJSON(files: [("a", 11, [(sha, 10, 6)])]), "fileSize"),
            (indexJSON(files: [("a", -10, [])]), "fileSize"),
            (indexJSON(files: [("a", 10, [(sha, 10, 6)]), ("b", 20, [(sha, 20, 6)])]), "chunkLength"),
            (indexJSON(files: [("a", 10, [(sha, 10, 6)])], bundles: [("packs/levels/1-0.bundle", 7, 1)]), "bundleSize"),
            (
                indexJSON(files: [("a", 10, [(sha, 10, 6)])], bundles: [("packs/levels/1-0.bundle", -6, 1)]),
                "bundleSize"
            ),
            (indexJSON(files: [("a", 10, [(sha, 10, 6)])], bundles: [("../../etc/passwd", 6, 1)]), "bundlePath"),
            (indexJSON(files: [("a", 10, [(sha, 10, 6)])], bundles: []), "bundleChunks"),
            (indexJSON(files: [("a", 10, [(sha, 10, 6)])], version: 0), "version"),
            (indexJSON(files: [("a", 10, [(sha, 10, 6)])], version: 1 << 60), "version"),
            (indexJSON(files: [(String(repeating: "d/", count: 64) + "f", 0, [])]), "pathDepth"),
            (indexJSON(files: [(String(repeating: "x", count: 1025), 0, [])]), "pathLength"),
            (indexJSON(files: [("a", 0, []), ("a/b", 0, [])]), "path"),
            (Array(#"{"formatVersion":1,"id":"levels","version":1,"files":[]"#.utf8), "json"),
        ] as [([UInt8], String)])
    func eachLieIsRefused(json: [UInt8], check: String) throws {
        let error = try #require(Self.refusal(json))
        #expect(error.code == .invalidMetadata, "\(error)")
        #expect(error.operation == check, "\(error)")
    }

    @Test("paths are checked in linear time: 2,000 folders deep is refused at once, 100,001 files too")
    func depthAndCountAreBounded() throws {
        let deep = Self.indexJSON(files: [(String(repeating: "d/", count: 2000) + "f", 0, [])])
        #expect(Self.refusal(deep)?.operation == "pathLength")  // 4,001 bytes: refused before its depth is counted
        let many = Self.indexJSON(files: (0...PackLimits.maximumFiles).map { ("f\($0)", 0, []) })
        #expect(Self.refusal(many)?.operation == "files")
        // 64 deep, the bound, is fine.
        _ = try PackIndex.decode(Self.indexJSON(files: [(String(repeating: "d/", count: 63) + "f", 0, [])]))
    }

    /// A download manifest's JSON (format 2 unless said) with one entry.
    static func manifestJSON(
        format: Int = 2, sequence: Int? = 1, expires: String? = "2099-01-01T00:00:00Z", apps: String? = #"["app"]"#,
        version: Int = 1, downloadSize: Int64 = 100, indexURL: String? = nil, twice: Bool = false
    ) -> [UInt8] {
        let url = indexURL ?? "https://cdn.example.com/packs/levels/\(version).json"
        let entry =
            #"{"assetPackID":"levels","version":\#(version),"downloadSize":\#(downloadSize),"#
            + #""downloadPolicy":{"onDemand":{}},"indexURL":"\#(url)","indexSHA256":"\#(sha)"}"#
        var fields = [#""formatVersion":\#(format)"#]
        if let sequence { fields.append(#""sequence":\#(sequence)"#) }
        if let expires { fields.append(#""expires":"\#(expires)""#) }
        if let apps { fields.append(#""apps":\#(apps)"#) }
        fields.append(#""assetPacks":[\#(entry)\#(twice ? "," + entry : "")]"#)
        return Array(("{" + fields.joined(separator: ",") + "}").utf8)
    }

    @Test(
        "a manifest's lies are refused by the check they break",
        arguments: [
            (manifestJSON(downloadSize: -5), "downloadSize"),
            (manifestJSON(downloadSize: 1 << 50), "downloadSize"),
            (manifestJSON(version: 0), "version"),
            (manifestJSON(twice: true), "id"),
            (manifestJSON(indexURL: "file:///etc/passwd"), "indexURL"),
            (manifestJSON(indexURL: "https://cdn.example.com/packs/other/1.json"), "indexURL"),
            (manifestJSON(format: 4), "format"),
            (manifestJSON(sequence: nil), "sequence"),
            (manifestJSON(sequence: 0), "sequence"),
            (manifestJSON(expires: nil), "expires"),
            (manifestJSON(expires: "tomorrow"), "expires"),
            (manifestJSON(apps: "[]"), "apps"),
        ] as [([UInt8], String)])
    func manifestLiesAreRefused(json: [UInt8], check: String) throws {
        let error = #expect(throws: PackError.self) { _ = try PackPublisher.DownloadManifest.decode(json) }
        #expect(error?.code == .invalidMetadata)
        #expect(error?.operation == check, "\(String(describing: error))")
    }

    // MARK: ManifestTrust

    static let now = Date(timeIntervalSince1970: 2_000_000_000)

    static func trust(
        _ json: [UInt8], sha256: String = "s2", signed: Bool = true, mark: ManifestTrust.Mark? = nil,
        local: [String: Int] = [:], allowsDowngrade: Bool = false
    ) throws -> Result<ManifestTrust.Mark?, ManifestRefusal> {
        var manifest = try PackPublisher.DownloadManifest.decode(json)
        if allowsDowngrade { manifest.assetPacks[0].allowsDowngrade = true }
        return ManifestTrust.evaluate(
            .init(
                manifest: manifest, sha256: sha256, app: "app", signed: signed, now: now, mark: mark,
                localVersions: local))
    }

    static func code(_ result: Result<ManifestTrust.Mark?, ManifestRefusal>) -> Int? {
        if case .failure(let refusal) = result { return refusal.code }
        return nil
    }

    @Test("replay, freeze, mix-and-match and downgrade: each refused with its own code; the rest accepted")
    func trustRules() throws {
        let mark = ManifestTrust.Mark(sequence: 5, sha256: "s5")
        // Accepted: a higher sequence (the new mark), the same one with the same bytes.
        #expect(
            try Self.trust(Self.manifestJSON(sequence: 6), mark: mark) == .success(.init(sequence: 6, sha256: "s2")))
        #expect(try Self.trust(Self.manifestJSON(sequence: 5), sha256: "s5", mark: mark) == .success(mark))
        // Rollback (a replay of an older manifest, say one that drops a pack), fork.
        #expect(Self.code(try Self.trust(Self.manifestJSON(sequence: 4), mark: mark)) == 1106)
        #expect(Self.code(try Self.trust(Self.manifestJSON(sequence: 5), sha256: "other", mark: mark)) == 1107)
        // Freeze: expired, or expiring this very second.
        #expect(Self.code(try Self.trust(Self.manifestJSON(expires: "2020-01-01T00:00:00Z"))) == 1105)
        let exactly = PackPublisher.DownloadManifest.formatDate(Self.now)
        #expect(Self.code(try Self.trust(Self.manifestJSON(expires: exactly))) == 1105)
        // Mix-and-match: another app's manifest; a signed one naming no app.
        #expect(Self.code(try Self.trust(Self.manifestJSON(apps: #"["other"]"#))) == 1104)
        #expect(Self.code(try Self.trust(Self.manifestJSON(apps: nil))) == 1104)
        #expect(Self.code(try Self.trust(Self.manifestJSON(apps: nil), signed: false)) == nil)
        // A signed format 1: nothing fresh in it. Unsigned, it is read (no mark).
        let old = Self.manifestJSON(format: 1, sequence: nil, expires: nil, apps: nil)
        #expect(Self.code(try Self.trust(old)) == 1103)
        #expect(try Self.trust(old, signed: false) == .success(nil))
        // A version below the local one: only when the publisher says so.
        #expect(Self.code(try Self.trust(Self.manifestJSON(version: 2), local: ["levels": 3])) == 1108)
        #expect(Self.code(try Self.trust(old, signed: false, local: ["levels": 3])) == 1108)
        #expect(
            Self.code(try Self.trust(Self.manifestJSON(version: 2), local: ["levels": 3], allowsDowngrade: true)) == nil
        )
        #expect(Self.code(try Self.trust(Self.manifestJSON(version: 3), local: ["levels": 3])) == nil)
        // Each refusal's message says what to do.
        for refusal in [
            ManifestRefusal.rollback(accepted: 5, offered: 4), .expired("2020-01-01T00:00:00Z"),
            .wrongApp(app: "app", listed: ["other"]), .notFresh, .downgrade(pack: "levels", local: 3, offered: 2),
        ] {
            #expect(refusal.description.contains("ba pack publish"), "\(refusal)")
        }
        #expect(Set([1100, 1101, 1102, 1103, 1104, 1105, 1106, 1107, 1108, 1109]).count == 10)
    }

    @Test(
        "ba pack build keeps to the device's bounds: chunks devices would refuse, or a path they would, are not built")
    func theBuilderKeepsToTheBounds() throws {
        let root = try PackBuildTests.Folder()
        let publish = try PackBuildTests.Folder()
        defer {
            root.remove()
            publish.remove()
        }
        try root.write([1, 2, 3], to: "Levels/a.bin")
        try root.write([1], to: "intro.bin")
        let huge = PackBuilder(parameters: try .init(average: 16 << 20))
        #expect {
            try huge.build(try PackBuildTests.manifest(), root: root.path, version: 1, publishDirectory: publish.path)
        } throws: { "\($0)".contains("would be refused by devices") }
        // A folder 70 deep under the selected one: the index would be refused, so it is not written.
        try root.write([4], to: "Levels/" + Array(repeating: "d", count: 70).joined(separator: "/") + "/deep.bin")
        let builder = PackBuilder(parameters: try .init(average: 4096))
        let error = #expect(throws: PackError.self) {
            try builder.build(
                try PackBuildTests.manifest(), root: root.path, version: 1, publishDirectory: publish.path)
        }
        #expect(error?.operation == "pathDepth", "\(String(describing: error))")
        #expect(!FileManager.default.fileExists(atPath: publish.path + "/packs/levels/1.json"))
    }
}
