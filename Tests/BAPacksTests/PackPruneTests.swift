import Foundation
import Testing

@testable import BAPacks

/// `ba pack prune`: the publish folder keeps what its kept versions and its current manifest
/// reference, and nothing else once the grace period is over; what it keeps still verifies.
@Suite("pack prune")
struct PackPruneTests {
    typealias Folder = PackBuildTests.Folder

    /// Versions 1 to 3 of `levels`, each rewriting one file, built into `public/`.
    static func threeVersions(_ folder: Folder) throws -> [PackIndex] {
        let manifest = try PackBuildTests.manifest()
        let builder = PackBuilder(parameters: try .init(average: 1024))
        try folder.write([9], to: "intro.bin")
        var indexes: [PackIndex] = []
        for version in 1...3 {
            for number in 0..<6 {
                let salt = number == version ? version : 0
                try folder.write(
                    (0..<5000).map { UInt8(truncatingIfNeeded: $0 * (number + 3) + salt) }, to: "Levels/\(number).bin")
            }
            indexes.append(
                try builder.build(
                    manifest, root: folder.path, version: version, publishDirectory: folder.path + "/public"
                )
                .index)
        }
        return indexes
    }

    static func files(_ publish: String) -> Set<String> {
        let enumerator = FileManager.default.enumerator(atPath: publish)
        var found: Set<String> = []
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: publish + "/" + path, isDirectory: &isDirectory),
                !isDirectory.boolValue
            {
                found.insert(path)
            }
        }
        return found
    }

    /// What an index references, as paths in the publish folder.
    static func referenced(_ index: PackIndex, _ publish: String) throws -> Set<String> {
        var paths: Set<String> = [PackIndex.indexPath(id: index.id, version: index.version)]
        let bytes = Array(
            try Data(
                contentsOf: URL(
                    fileURLWithPath: publish + "/" + PackIndex.indexPath(id: index.id, version: index.version))))
        if case .tree(let root) = try PackIndex.Document.decode(bytes) {
            paths.formUnion(root.parts.map { PackIndexRoot.partPath($0.sha256) })
        }
        paths.formUnion((index.bundles ?? []).map(\.path))
        paths.formUnion(index.distinctChunks.map { PackIndex.chunkPath($0.sha256) })
        return paths
    }

    @Test func keepsTheNewestAndRemovesTheRest() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let publish = folder.path + "/public"
        let indexes = try Self.threeVersions(folder)
        _ = try PackPublisher.publish(publish, baseURL: "http://127.0.0.1:1/p")
        let before = Self.files(publish)
        // Within the grace period only the old indexes go; a dry run removes nothing.
        let dry = try PackPruner.prune(publish, keep: 1, grace: 0, dryRun: true)
        #expect(Self.files(publish) == before && dry.bytesFreed > 0)
        let young = try PackPruner.prune(publish, keep: 2, grace: 3600)
        #expect(young.removed == ["packs/levels/1.json"] && young.young > 0)
        let pruned = try PackPruner.prune(publish, keep: 1, grace: 0)
        #expect(pruned.kept == ["levels": [3]])
        let kept = try Self.referenced(indexes[2], publish)
        let left = Self.files(publish)
        // Everything version 3 references stays, and nothing else of the packs is left.
        #expect(kept.isSubset(of: left))
        #expect(left.subtracting(kept) == ["manifest.json"])
        #expect(pruned.removed.contains("packs/levels/2.json") && pruned.removed.contains("packs/levels/2-0.bundle"))
        #expect(pruned.bytesFreed > 0 && pruned.bytesFreed + young.bytesFreed == dry.bytesFreed)
        #expect(PackVerifier.verify(publishDirectory: publish).problems == [])
        #expect(try PackIndex.read(publish + "/packs/levels/3.json") == indexes[2])
    }

    @Test func neverRemovesWhatTheManifestLists() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let publish = folder.path + "/public"
        let indexes = try Self.threeVersions(folder)
        // The manifest takes the pack back to version 1: version 1 stays whatever --keep says.
        _ = try PackPublisher.publish(publish, baseURL: "http://127.0.0.1:1/p", downgrades: ["levels": 1])
        let pruned = try PackPruner.prune(publish, keep: 1, grace: 0)
        #expect(pruned.kept == ["levels": [1, 3]])
        let left = Self.files(publish)
        #expect(try Self.referenced(indexes[0], publish).isSubset(of: left))
        #expect(try Self.referenced(indexes[2], publish).isSubset(of: left))
        #expect(!left.contains("packs/levels/2.json"))
        #expect(PackVerifier.verify(publishDirectory: publish).problems == [])
    }

    @Test func removesNothingWhenItCannotTellWhatIsUsed() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let publish = folder.path + "/public"
        _ = try Self.threeVersions(folder)
        _ = try PackPublisher.publish(publish, baseURL: "http://127.0.0.1:1/p")
        let before = Self.files(publish)
        #expect(throws: PackError.self) { try PackPruner.prune(publish, keep: 0, grace: 0) }
        // A damaged manifest: what devices are told to fetch is unknown.
        let manifest = publish + "/manifest.json"
        let original = try Data(contentsOf: URL(fileURLWithPath: manifest))
        try Data("{".utf8).write(to: URL(fileURLWithPath: manifest))
        #expect(throws: PackError.self) { try PackPruner.prune(publish, keep: 1, grace: 0) }
        try original.write(to: URL(fileURLWithPath: manifest))
        // A kept index that cannot be read.
        let index = publish + "/packs/levels/3.json"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: index))
        try Data("[]".utf8).write(to: URL(fileURLWithPath: index))
        #expect(throws: PackError.self) { try PackPruner.prune(publish, keep: 1, grace: 0) }
        try bytes.write(to: URL(fileURLWithPath: index))
        #expect(Self.files(publish) == before)
    }

    /// A pack folder that cannot be listed (here a link to nowhere) is not a pack without versions:
    /// its chunks would then be referenced by nothing, and go.
    @Test func removesNothingWhenAPackFolderCannotBeListed() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let publish = folder.path + "/public"
        _ = try Self.threeVersions(folder)
        let before = Self.files(publish)
        try FileManager.default.moveItem(atPath: publish + "/packs/levels", toPath: folder.path + "/levels-aside")
        try FileManager.default.createSymbolicLink(
            atPath: publish + "/packs/levels", withDestinationPath: folder.path + "/nowhere")
        #expect(throws: PackError.self) { try PackPruner.prune(publish, keep: 1, grace: 0) }
        try FileManager.default.removeItem(atPath: publish + "/packs/levels")
        try FileManager.default.moveItem(atPath: folder.path + "/levels-aside", toPath: publish + "/packs/levels")
        #expect(Self.files(publish) == before)
    }
}
