import BAHashing
import Foundation
import Testing

@testable import BAPacks

/// `ba pack build` and `ba pack verify` on real files: Apple's manifest read and checked, files cut
/// and stored once, a new version sharing the chunks of the old one, immutable versions, links
/// refused, and every kind of damage to a published folder found.
@Suite("pack build and verify")
struct PackBuildTests {
    /// A fresh folder, removed by `remove()`.
    struct Folder {
        let path = NSTemporaryDirectory() + "ba-packs-\(UUID().uuidString)"
        init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        func write(_ bytes: [UInt8], to relative: String, mode: Int = 0o644) throws {
            let full = path + "/" + relative
            try FileManager.default.createDirectory(
                atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: full))
            chmod(full, mode_t(mode))
        }
        func remove() { try? FileManager.default.removeItem(atPath: path) }
    }

    static let manifestJSON = #"""
        { "assetPackID": "levels",
          "downloadPolicy": { "prefetch": { "installationEventTypes": ["firstInstallation", "subsequentUpdate"] } },
          "fileSelectors": [ { "directory": "Levels" }, { "file": "intro.bin" } ],
          "platforms": ["linux", "macOS"], "userInfo": { "tier": 1, "name": "Levels" } }
        """#

    static func manifest() throws -> PackManifest { try PackManifest.parse(Array(manifestJSON.utf8)) }

    static func chunkFiles(_ publish: String) -> Set<String> {
        let chunks = publish + "/chunks"
        var names: Set<String> = []
        for prefix in (try? FileManager.default.contentsOfDirectory(atPath: chunks)) ?? [] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: chunks + "/" + prefix)) ?? [] {
                names.insert(name)
            }
        }
        return names
    }

    @Test func readsApplesManifest() throws {
        let manifest = try Self.manifest()
        #expect(manifest.assetPackID == "levels")
        #expect(manifest.downloadPolicy == .prefetch([.firstInstallation, .subsequentUpdate]))
        #expect(manifest.fileSelectors == [.directory("Levels"), .file("intro.bin")])
        #expect(manifest.isForLinux)
        #expect(manifest.userInfo == .object(["tier": .integer(1), "name": .string("Levels")]))
        let onDemand = try PackManifest.parse(
            Array(
                #"{"assetPackID":"x","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}],"platforms":["iOS"]}"#
                    .utf8))
        #expect(onDemand.downloadPolicy == .onDemand && !onDemand.isForLinux)
    }

    @Test(arguments: [
        (#"{"downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}]}"#, "assetPackID"),
        (#"{"assetPackID":"../x","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}]}"#, "not usable"),
        (#"{"assetPackID":"x","fileSelectors":[{"file":"a"}]}"#, "downloadPolicy"),
        (
            #"{"assetPackID":"x","downloadPolicy":{"onDemand":{},"essential":{"installationEventTypes":["firstInstallation"]}},"fileSelectors":[{"file":"a"}]}"#,
            "exactly one"
        ),
        (
            #"{"assetPackID":"x","downloadPolicy":{"essential":{"installationEventTypes":["launch"]}},"fileSelectors":[{"file":"a"}]}"#,
            "launch"
        ),
        (
            #"{"assetPackID":"x","downloadPolicy":{"prefetch":{}},"fileSelectors":[{"file":"a"}]}"#,
            "installationEventTypes"
        ),
        (#"{"assetPackID":"x","downloadPolicy":{"onDemand":{}},"fileSelectors":[]}"#, "selects no files"),
        (#"{"assetPackID":"x","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"../etc/passwd"}]}"#, "inside"),
        (
            #"{"assetPackID":"x","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a","directory":"b"}]}"#,
            "exactly one of"
        ),
        (
            #"{"assetPackID":"x","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}],"platforms":["amiga"]}"#,
            "amiga"
        ),
        (#"{"assetPackID": 3}"#, "not valid"),
    ])
    func badManifestsAreRefusedSayingWhat(json: String, says: String) {
        #expect {
            try PackManifest.parse(Array(json.utf8))
        } throws: { error in
            "\(error)".contains(says)
        }
    }

    @Test func buildsStoresEachChunkOnceAndVerifies() throws {
        let root = try Folder()
        let publish = try Folder()
        defer {
            root.remove()
            publish.remove()
        }
        let big = ContentDefinedChunkerTests.randomBytes(3 << 20, seed: 11)
        try root.write(big, to: "Levels/one.bin")
        try root.write(big, to: "Levels/copy.bin")  // the same bytes: its chunks are stored once
        try root.write(ContentDefinedChunkerTests.randomBytes(10_000, seed: 12), to: "intro.bin", mode: 0o755)
        try root.write([1, 2, 3], to: "not-selected.bin")
        let builder = PackBuilder(parameters: try .init(average: 16_384))
        let report = try builder.build(try Self.manifest(), root: root.path, version: 1, publishDirectory: publish.path)
        #expect(report.index.files.map(\.path) == ["Levels/copy.bin", "Levels/one.bin", "intro.bin"])
        #expect(report.index.files.map(\.mode) == [0o644, 0o644, 0o755])
        let one = try #require(report.index.files.first { $0.path == "Levels/one.bin" })
        #expect(one.size == Int64(big.count))
        #expect(one.sha256 == big.withUnsafeBytes { SHA256Hasher.hex(of: $0) })
        #expect(report.chunksWritten == Self.chunkFiles(publish.path).count)
        #expect(report.chunksReused >= one.chunks.count, "the copy reuses every chunk of the original")
        #expect(report.index.downloadSize < Int64(2 * big.count), "a shared chunk counts once")
        let verified = PackVerifier.verify(publishDirectory: publish.path)
        #expect(verified.problems.isEmpty, "\(verified.problems)")
        #expect(verified.indexes == 1 && verified.files == 3)
        // The same build again changes nothing; other content under the same version is refused.
        _ = try builder.build(try Self.manifest(), root: root.path, version: 1, publishDirectory: publish.path)
        try root.write([9], to: "intro.bin")
        #expect {
            try builder.build(try Self.manifest(), root: root.path, version: 1, publishDirectory: publish.path)
        } throws: { "\($0)".contains("--version 2") }
    }

    @Test func aNewVersionStoresOnlyTheChunksAroundWhatChanged() throws {
        let root = try Folder()
        let publish = try Folder()
        defer {
            root.remove()
            publish.remove()
        }
        var big = ContentDefinedChunkerTests.randomBytes(8 << 20, seed: 13)
        try root.write(big, to: "Levels/world.bin")
        try root.write([0], to: "intro.bin")
        let builder = PackBuilder(parameters: try .init(average: 65_536))
        let first = try builder.build(try Self.manifest(), root: root.path, version: 1, publishDirectory: publish.path)
        big.insert(42, at: 4_000_000)
        try root.write(big, to: "Levels/world.bin")
        let second = try builder.build(try Self.manifest(), root: root.path, version: 2, publishDirectory: publish.path)
        #expect(second.chunksWritten <= 3, "one byte inserted: \(second.chunksWritten) new chunks")
        #expect(second.bytesWritten <= Int64(3 * builder.parameters.maximum))
        #expect(first.chunksWritten > 100)
        #expect(PackVerifier.verify(publishDirectory: publish.path).problems.isEmpty)
    }

    @Test func symbolicLinksAreRefusedNotFollowed() throws {
        let root = try Folder()
        let publish = try Folder()
        defer {
            root.remove()
            publish.remove()
        }
        try root.write([1], to: "intro.bin")
        try root.write([2], to: "Levels/a.bin")
        symlink("/etc/passwd", root.path + "/Levels/secret")
        #expect {
            try PackBuilder(parameters: try .init(average: 4096)).build(
                try Self.manifest(), root: root.path, version: 1, publishDirectory: publish.path)
        } throws: { "\($0)".contains("symbolic link") }
    }

    @Test func verifyFindsEveryKindOfDamage() throws {
        let root = try Folder()
        let publish = try Folder()
        defer {
            root.remove()
            publish.remove()
        }
        try root.write(ContentDefinedChunkerTests.randomBytes(200_000, seed: 14), to: "Levels/a.bin")
        try root.write(ContentDefinedChunkerTests.randomBytes(50_000, seed: 15), to: "intro.bin")
        let report = try PackBuilder(parameters: try .init(average: 4096)).build(
            try Self.manifest(), root: root.path, version: 1, publishDirectory: publish.path)
        let chunks = report.index.files.flatMap(\.chunks)
        // A chunk replaced by another chunk's frame (valid zstd, wrong bytes).
        let victim = publish.path + "/" + PackIndex.chunkPath(chunks[0].sha256)
        let other = publish.path + "/" + PackIndex.chunkPath(chunks[1].sha256)
        try FileManager.default.removeItem(atPath: victim)
        try FileManager.default.copyItem(atPath: other, toPath: victim)
        // A chunk cut short, and one missing.
        let short = publish.path + "/" + PackIndex.chunkPath(chunks[2].sha256)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: short))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: short))
        try FileManager.default.removeItem(atPath: publish.path + "/" + PackIndex.chunkPath(chunks.last!.sha256))
        let verified = PackVerifier.verify(publishDirectory: publish.path)
        #expect(verified.problems.count >= 3, "\(verified.problems)")
        #expect(verified.problems.contains { $0.contains("missing") })
        #expect(verified.problems.contains { $0.contains("not its name") || $0.contains("declares") })
        #expect(verified.problems.contains { $0.contains(chunks[2].sha256) })
    }
}
