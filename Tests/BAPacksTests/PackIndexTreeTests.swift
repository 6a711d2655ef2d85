import BACore
import BAHashing
import Foundation
import Testing

@testable import BAPacks

/// Index format 2 (``PackIndexRoot``): a root and parts addressed by hash. A small update changes
/// the parts of the files it changes and no other; every part is checked against its name before
/// it is decompressed, within the bounds of ``PackLimits`` across the whole tree; format 1 still
/// builds and reads.
@Suite("pack index tree")
struct PackIndexTreeTests {
    typealias Folder = PackBuildTests.Folder

    static func file(_ number: Int, chunks: Int = 3, salt: Int = 0) -> PackIndex.File {
        let chunkList = (0..<chunks).map { index in
            PackIndex.Chunk(
                sha256: SHA256Hasher.hex(of: Array("\(number)-\(index)-\(salt)".utf8)), length: 100, storedLength: 50)
        }
        return PackIndex.File(
            path: "Levels/\(number).bin", size: Int64(100 * chunks), mode: 0o644,
            sha256: SHA256Hasher.hex(of: Array("file \(number) \(salt)".utf8)), chunks: chunkList)
    }

    static func index(version: Int, files: [PackIndex.File]) -> PackIndex {
        PackIndex(
            formatVersion: 2, id: "levels", version: version, userInfo: nil, downloadPolicy: .onDemand,
            chunking: try! .init(average: 65536), files: files, bundles: nil)
    }

    /// The root's parts, with the frame of each, as `ba pack build` writes them.
    static func tree(_ index: PackIndex) throws -> (PackIndexRoot, [String: [UInt8]]) {
        let (root, frames) = try PackIndexRoot.split(index)
        return (root, Dictionary(frames.map { ($0.sha256, $0.frame) }, uniquingKeysWith: { first, _ in first }))
    }

    static func assemble(_ root: PackIndexRoot, _ frames: [String: [UInt8]]) throws -> PackIndex {
        let files = try root.parts.map { part in
            try #require(frames[part.sha256]).withUnsafeBytes { try root.files(of: part, frame: $0) }
        }
        return try root.assemble(files)
    }

    @Test func aTwoFileUpdateChangesTwoPartsAtMost() throws {
        let files = (0..<300).map { Self.file($0, chunks: 29) }
        let old = Self.index(version: 1, files: files)
        var changed = files
        changed[17] = Self.file(17, chunks: 29, salt: 1)
        changed[203] = Self.file(203, chunks: 29, salt: 1)
        let new = Self.index(version: 2, files: changed)
        let (oldRoot, oldFrames) = try Self.tree(old)
        let (newRoot, newFrames) = try Self.tree(new)
        #expect(oldRoot.parts.count >= 8, "parts: \(oldRoot.parts.count)")
        let fresh = Set(newRoot.parts.map(\.sha256)).subtracting(oldRoot.parts.map(\.sha256))
        #expect((1...2).contains(fresh.count), "new parts: \(fresh.count)")
        // What an update fetches (the new parts) is a small share of the whole index.
        let freshBytes = fresh.reduce(0) { $0 + (newFrames[$1]?.count ?? 0) }
        let wholeJSON = try JSONCoding.encoder.encode(new).count
        #expect(freshBytes * 5 < wholeJSON, "\(freshBytes) of \(wholeJSON)")
        // Both assemble to the index they came from.
        #expect(try Self.assemble(oldRoot, oldFrames) == old)
        #expect(try Self.assemble(newRoot, newFrames) == new)
        // A file added or removed moves no boundary but its own part's.
        var fewer = files
        fewer.remove(at: 100)
        let (fewerRoot, _) = try Self.tree(Self.index(version: 3, files: fewer))
        #expect((1...2).contains(Set(fewerRoot.parts.map(\.sha256)).subtracting(oldRoot.parts.map(\.sha256)).count))
    }

    @Test func aPartIsCheckedBeforeItIsDecompressed() throws {
        let (root, frames) = try Self.tree(Self.index(version: 1, files: (0..<40).map { Self.file($0) }))
        let part = root.parts[0]
        var frame = try #require(frames[part.sha256])
        func refusal(_ part: PackIndexRoot.Part, _ frame: [UInt8]) -> String? {
            let result: Result<[PackIndex.File], PackError> = frame.withUnsafeBytes { buffer in
                Result { () throws(PackError) in try root.files(of: part, frame: buffer) }
            }
            guard case .failure(let error) = result else { return nil }
            return error.code == .invalidMetadata ? error.operation : "code \(error.code)"
        }
        #expect(refusal(part, frame) == nil)
        // One byte changed: refused by its SHA-256 (zstd never sees it).
        frame[frame.count / 2] ^= 1
        #expect(refusal(part, frame) == "partSHA256")
        #expect(refusal(part, Array(frame.dropLast())) == "partSize")
        // A root that names a frame by its hash but lies about its decompressed length or count.
        let good = try #require(frames[part.sha256])
        var longer = part
        longer.length += 1
        #expect(refusal(longer, good) == "partFrame")
        var more = part
        more.files += 1
        #expect(refusal(more, good) == "partFiles")
        // A frame that decompresses to what is not a part (a bomb is bounded by the root's length).
        let zeros = [UInt8](repeating: 0x20, count: 1 << 20)
        let bomb = try zeros.withUnsafeBytes { try Zstd.compress($0) }
        var named = PackIndexRoot.Part(
            sha256: bomb.withUnsafeBytes { SHA256Hasher.hex(of: $0) }, storedLength: bomb.count, length: 1000, files: 1)
        #expect(refusal(named, bomb) == "partFrame")
        named.length = zeros.count
        #expect(refusal(named, bomb) == "json")
    }

    @Test func theRootIsBounded() throws {
        let (root, _) = try Self.tree(Self.index(version: 1, files: (0..<40).map { Self.file($0) }))
        func check(_ change: (inout PackIndexRoot) -> Void) -> String? {
            var lying = root
            change(&lying)
            guard let bytes = try? JSONCoding.encoder.encode(lying) else { return "encode" }
            do throws(PackError) {
                _ = try PackIndexRoot.decode(Array(bytes))
                return nil
            } catch { return error.operation }
        }
        #expect(check { _ in } == nil)
        #expect(check { $0.formatVersion = 3 } == "format")
        #expect(check { $0.id = "../x" } == "id")
        #expect(check { $0.parts[0].length = 0 } == "part")
        #expect(check { $0.parts[0].length = PackLimits.maximumIndexBytes + 1 } == "part")
        #expect(
            check { $0.parts[0].storedLength = PackLimits.maximumStoredIndexPart($0.parts[0].length) + 1 } == "part")
        #expect(check { $0.parts[0].files = 0 } == "part")
        #expect(check { $0.parts[0].sha256 = "XYZ" } == "part")
        // Across parts: the decompressed lengths and the files add up within one index's bounds.
        #expect(
            check { root in
                root.parts = Array(repeating: root.parts[0], count: 3)
                for number in root.parts.indices { root.parts[number].length = PackLimits.maximumIndexBytes / 2 }
            } == "indexSize")
        #expect(
            check { root in
                root.parts = Array(repeating: root.parts[0], count: 3)
                for number in root.parts.indices { root.parts[number].files = PackLimits.maximumFiles / 2 }
            } == "files")
        #expect(
            check { $0.parts = Array(repeating: $0.parts[0], count: PackLimits.maximumIndexParts + 1) } == "parts")
        // A root whose parts repeat a file is refused whole, as one index listing it twice.
        let (_, frames) = try Self.tree(Self.index(version: 1, files: (0..<40).map { Self.file($0) }))
        var twice = root
        twice.parts = [root.parts[0], root.parts[0]]
        let error = #expect(throws: PackError.self) { _ = try Self.assemble(twice, frames) }
        #expect(error?.operation == "path")
    }

    @Test func bothFormatsBuildAndRead() throws {
        let folder = try Folder()
        defer { folder.remove() }
        for number in 0..<40 {
            try folder.write(Array(repeating: UInt8(number), count: 3000 + number), to: "Levels/\(number).bin")
        }
        try folder.write([1, 2, 3], to: "intro.bin")
        let manifest = try PackBuildTests.manifest()
        var builder = PackBuilder(parameters: try .init(average: 1024))
        let two = try builder.build(manifest, root: folder.path, version: 1, publishDirectory: folder.path + "/public")
        builder.indexFormat = 1
        let one = try builder.build(manifest, root: folder.path, version: 2, publishDirectory: folder.path + "/public")
        let rootPath = folder.path + "/public/packs/levels/1.json"
        guard
            case .tree(let root) = try PackIndex.Document.decode(
                Array(try Data(contentsOf: URL(fileURLWithPath: rootPath))))
        else {
            Issue.record("version 1 is not a tree")
            return
        }
        #expect(root.parts.count >= 2)
        guard
            case .whole = try PackIndex.Document.decode(
                Array(try Data(contentsOf: URL(fileURLWithPath: folder.path + "/public/packs/levels/2.json"))))
        else {
            Issue.record("version 2 is not one document")
            return
        }
        #expect(try PackIndex.read(rootPath) == two.index)
        #expect(try PackIndex.read(folder.path + "/public/packs/levels/2.json").files == one.index.files)
        #expect(PackVerifier.verify(publishDirectory: folder.path + "/public").problems == [])
        // The same parts serve both versions: nothing new was written for the unchanged files.
        let published = try PackPublisher.publish(folder.path + "/public", baseURL: "http://127.0.0.1:1/p")
        #expect(published.assetPacks.first?.version == 2)
        // A missing part is a problem `ba pack verify` names.
        try FileManager.default.removeItem(
            atPath: folder.path + "/public/" + PackIndexRoot.partPath(root.parts[0].sha256))
        #expect(PackVerifier.verify(publishDirectory: folder.path + "/public").problems.count == 1)
    }
}
