import BACore
import BAHashing
import BAPackManifest
import Foundation

/// Index format 2: the index of a version as a tree of depth two addressed by hash, so that an
/// update fetches the metadata of what changed and not the whole index again.
///
/// `packs/ID/VERSION.json` (whose SHA-256 the signed download manifest gives) is the **root**:
/// the pack's id, version, policy, `userInfo`, chunking and bundles, and its files' records cut
/// into **parts**, each named by the SHA-256 of its zstd frame (`meta/XX/SHA256` in the publish
/// folder). A part holds the records of a run of files (``PackIndex/File``, as format 1 lists
/// them); the runs are cut where a file's path hashes to a boundary (about
/// ``PackIndexRoot/averagePartFiles`` files a part) or a part reaches
/// ``PackIndexRoot/maximumPartChunks`` chunk references, so a changed file changes its own part
/// and no other, and a part unchanged between versions is the same object, which a device that
/// has it never fetches again.
///
/// Trust: the root is checked against the manifest's SHA-256 before it is decoded; each part's
/// frame against the SHA-256 the root names before it is decompressed (within the length the
/// root declares, which zstd's frame header must repeat) and decoded; the assembled
/// ``PackIndex`` is then checked whole (``PackIndex/checkInstallable()``), so the bounds of
/// ``PackLimits`` hold across the whole tree as they do for one format 1 document.
package struct PackIndexRoot: Sendable, Hashable, Codable {
    /// One part of the file records.
    package struct Part: Sendable, Hashable, Codable {
        /// SHA-256 of its zstd frame, lowercase hex: its name.
        package var sha256: String
        /// The frame's length.
        package var storedLength: Int
        /// The JSON document's length, decompressed.
        package var length: Int
        /// How many files it lists.
        package var files: Int
    }

    /// The format: 2.
    package var formatVersion: Int
    package var id: String
    package var version: Int
    package var userInfo: JSONValue?
    package var downloadPolicy: PackManifest.DownloadPolicy
    package var chunking: ContentDefinedChunker.Parameters
    package var bundles: [PackIndex.Bundle]?
    /// The file records, in order.
    package var parts: [Part]
    /// The pack's language (``PackIndex/language``).
    package var language: String?

    /// The format of a root.
    package static let format = 2
    /// A part is cut after a file whose path's hash is a multiple of this (content-defined).
    package static let averagePartFiles: UInt64 = 16
    /// ... or once it holds this many chunk references (a large file's part holds it alone).
    package static let maximumPartChunks = 1024

    /// A part's path, relative to the publish folder (or to a device's pack root).
    package static func partPath(_ sha256: String) -> String { "meta/\(sha256.prefix(2))/\(sha256)" }

    /// Where the parts of the index at `indexPath` are kept: `meta/` beside the folder of the
    /// index folders (`PUBLISH_DIR/packs/ID/N.json` → `PUBLISH_DIR/meta`, and on a device
    /// `ROOT/indexes/ID/N.json` → `ROOT/meta`).
    package static func partsRoot(forIndexAt indexPath: String) -> String {
        let folder = ((indexPath as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent
        return (folder as NSString).deletingLastPathComponent
    }
}

/// A part's document: its files' records.
struct PackIndexPart: Codable {
    var files: [PackIndex.File]
}

extension PackIndex {
    /// An index document as published at `packs/ID/VERSION.json`.
    package enum Document: Sendable, Hashable {
        /// Format 1: every file in one document.
        case whole(PackIndex)
        /// Format 2: a root whose parts are fetched (or found) and checked one by one.
        case tree(PackIndexRoot)

        /// The document in `bytes`: its format read first, then decoded and checked as that
        /// format (``PackIndex/decode(_:)``, ``PackIndexRoot/decode(_:)``).
        ///
        /// - Throws: ``PackError`` (``PackError/Code/invalidMetadata``) naming the broken rule.
        package static func decode(_ bytes: [UInt8]) throws(PackError) -> Document {
            struct Format: Decodable { var formatVersion: Int }
            let format = try JSONCoding.decodeBounded(
                Format.self, from: bytes, limit: PackLimits.maximumIndexBytes, what: "the index",
                sizeCheck: "indexSize")
            switch format.formatVersion {
            case 1: return .whole(try PackIndex.decode(bytes))
            case PackIndexRoot.format: return .tree(try PackIndexRoot.decode(bytes))
            default:
                throw .invalid(
                    "the index has format version \(format.formatVersion); this basd reads 1 and 2 (update basd)",
                    check: "format")
            }
        }
    }
}

extension PackIndexRoot {
    /// The root in `bytes`, decoded and checked: format 2, a usable id and version, at most
    /// ``PackLimits/maximumIndexParts`` parts, each named by a SHA-256, 1 to
    /// ``PackLimits/maximumIndexBytes`` bytes long with a frame no longer than zstd's bound for
    /// it, listing 1 or more files; the parts' lengths adding up to at most
    /// ``PackLimits/maximumIndexBytes`` (the bound of a whole index) and their files to at most
    /// ``PackLimits/maximumFiles``, with overflow-checked sums.
    ///
    /// - Throws: ``PackError`` (``PackError/Code/invalidMetadata``) naming the broken rule.
    package static func decode(_ bytes: [UInt8]) throws(PackError) -> PackIndexRoot {
        let root = try JSONCoding.decodeBounded(
            PackIndexRoot.self, from: bytes, limit: PackLimits.maximumIndexBytes, what: "the index",
            sizeCheck: "indexSize")
        try root.check()
        return root
    }

    private func check() throws(PackError) {
        guard formatVersion == Self.format else {
            throw .invalid("the index root has format version \(formatVersion), not 2", check: "format")
        }
        try PackIndex.checkIdentity(id: id, version: version)
        guard parts.count <= PackLimits.maximumIndexParts else {
            throw .invalid(
                "the index of \(id) has \(parts.count) parts; at most \(PackLimits.maximumIndexParts)",
                check: "parts")
        }
        var length = 0
        var files = 0
        for (number, part) in parts.enumerated() {
            guard PackIndex.isSHA256(part.sha256), (1...PackLimits.maximumIndexBytes).contains(part.length),
                (1...PackLimits.maximumStoredIndexPart(part.length)).contains(part.storedLength),
                (1...PackLimits.maximumFiles).contains(part.files)
            else {
                throw .invalid(
                    "part \(number) of the index of \(id) is malformed (length \(part.length), stored \(part.storedLength), files \(part.files))",
                    check: "part")
            }
            let (sum, overflow) = length.addingReportingOverflow(part.length)
            guard !overflow, sum <= PackLimits.maximumIndexBytes else {
                throw .invalid(
                    "the parts of the index of \(id) hold more than \(PackLimits.maximumIndexBytes) bytes, the most an index may",
                    check: "indexSize")
            }
            length = sum
            files += part.files
            guard files <= PackLimits.maximumFiles else {
                throw .invalid(
                    "the parts of the index of \(id) list more than \(PackLimits.maximumFiles) files", check: "files")
            }
        }
    }

    /// The files of `part`, from its zstd frame: the frame's length and SHA-256 checked against
    /// the root's first, then decompressed to exactly the length the root gives (already bounded
    /// by ``decode(_:)``), then decoded, listing the number of files the root gives.
    ///
    /// - Throws: ``PackError`` (``PackError/Code/invalidMetadata``) naming what is wrong.
    package func files(of part: Part, frame: UnsafeRawBufferPointer) throws(PackError) -> [PackIndex.File] {
        guard frame.count == part.storedLength else {
            throw .invalid(
                "index part \(part.sha256) of \(id) is \(frame.count) bytes, not the \(part.storedLength) the root gives",
                check: "partSize")
        }
        let actual = SHA256Hasher.hex(of: frame)
        guard actual == part.sha256 else {
            throw .invalid(
                "index part \(part.sha256) of \(id) has SHA-256 \(actual): the CDN serves another file",
                check: "partSHA256")
        }
        let bytes: [UInt8]
        do { bytes = try Zstd.decompress(frame, length: part.length) } catch {
            throw .invalid("index part \(part.sha256) of \(id): \(error)", check: "partFrame")
        }
        let document = try JSONCoding.decodeBounded(
            PackIndexPart.self, from: bytes, limit: PackLimits.maximumIndexBytes, what: "index part \(part.sha256)",
            sizeCheck: "indexSize")
        guard document.files.count == part.files else {
            throw .invalid(
                "index part \(part.sha256) of \(id) lists \(document.files.count) files, not the \(part.files) the root gives",
                check: "partFiles")
        }
        return document.files
    }

    /// The index these parts' files make (in the parts' order), checked whole
    /// (``PackIndex/checkInstallable()``).
    package func assemble(_ files: [[PackIndex.File]]) throws(PackError) -> PackIndex {
        guard files.count == parts.count else {
            throw .invalid("the index of \(id) has \(parts.count) parts, not \(files.count)", check: "parts")
        }
        let index = PackIndex(
            formatVersion: Self.format, id: id, version: version, userInfo: userInfo, downloadPolicy: downloadPolicy,
            chunking: chunking, files: files.flatMap { $0 }, bundles: bundles, language: language)
        try index.checkInstallable()
        return index
    }

    /// The index in format 2: its root, and each distinct part's name and frame, in order.
    package static func split(
        _ index: PackIndex, level: Int32 = 12
    ) throws(PackError) -> (
        root: PackIndexRoot, frames: [(sha256: String, frame: [UInt8])]
    ) {
        var root = PackIndexRoot(
            formatVersion: format, id: index.id, version: index.version, userInfo: index.userInfo,
            downloadPolicy: index.downloadPolicy, chunking: index.chunking, bundles: index.bundles, parts: [],
            language: index.language)
        var frames: [(sha256: String, frame: [UInt8])] = []
        var named: Set<String> = []
        var run: [PackIndex.File] = []
        var references = 0
        func cut() throws(PackError) {
            guard !run.isEmpty else { return }
            let json: [UInt8]
            do { json = Array(try JSONCoding.encoder.encode(PackIndexPart(files: run))) } catch {
                throw PackError("cannot encode an index part of \(index.id): \(error)")
            }
            let compressed: Result<[UInt8], PackError> = json.withUnsafeBytes { bytes in
                Result { () throws(PackError) in try Zstd.compress(bytes, level: level) }
            }
            let frame = try compressed.get()
            let sha256 = frame.withUnsafeBytes { SHA256Hasher.hex(of: $0) }
            root.parts.append(Part(sha256: sha256, storedLength: frame.count, length: json.count, files: run.count))
            if named.insert(sha256).inserted { frames.append((sha256, frame)) }
            run = []
            references = 0
        }
        for file in index.files {
            run.append(file)
            references += file.chunks.count
            if references >= maximumPartChunks || isBoundary(file.path) { try cut() }
        }
        try cut()
        return (root, frames)
    }

    /// Whether a part ends after the file at `path`: its SHA-256's first 8 bytes are a multiple
    /// of ``averagePartFiles`` (so the cut depends on the path alone, never on what is before it).
    static func isBoundary(_ path: String) -> Bool {
        let hex = Array(path.utf8).withUnsafeBytes { SHA256Hasher.hex(of: $0) }
        return (UInt64(hex.prefix(16), radix: 16) ?? 0) % averagePartFiles == 0
    }
}
