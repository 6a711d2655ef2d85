import BACore
import BAPackManifest
import Foundation

/// One version of one pack, as published: every file with its SHA-256 and its chunks in order
/// (`PUBLISH_DIR/packs/ID/VERSION.json`, immutable once published).
///
/// A chunk is named by the SHA-256 of its uncompressed bytes, so reuse across files, packs and
/// versions does not depend on the compressor; the chunk store keeps it as one zstd frame at
/// `chunks/XX/SHA256` (`XX` its first two hex digits).
package struct PackIndex: Sendable, Hashable, Codable {
    /// One chunk of a file.
    package struct Chunk: Sendable, Hashable, Codable {
        /// SHA-256 of the uncompressed bytes, lowercase hex: the chunk's name.
        package var sha256: String
        /// Uncompressed length.
        package var length: Int
        /// Length of its zstd frame in the store.
        package var storedLength: Int
    }

    /// One file of the pack.
    package struct File: Sendable, Hashable, Codable {
        /// Its path in the pack, `/`-separated, relative.
        package var path: String
        package var size: Int64
        /// Permission bits (0o644, or 0o755 for an executable).
        package var mode: UInt32
        /// SHA-256 of the whole file, lowercase hex.
        package var sha256: String
        package var chunks: [Chunk]
    }

    /// A bundle: the zstd frames of a run of the version's distinct chunks, back to back, in the
    /// order they first occur in ``files``, so a first install fetches a few large files instead
    /// of thousands of small ones. The bundles together hold every distinct chunk once.
    package struct Bundle: Sendable, Hashable, Codable {
        /// Its path, relative to the publish folder (`packs/ID/VERSION-K.bundle`).
        package var path: String
        /// Its size: the stored lengths of its chunks.
        package var size: Int64
        /// How many chunks it holds (the next ones in order after the previous bundle's).
        package var chunks: Int
    }

    /// The index format: 1 (the files listed here), or 2 when a root (``PackIndexRoot``) and its
    /// parts were assembled into it.
    package var formatVersion: Int
    package var id: String
    package var version: Int
    package var userInfo: JSONValue?
    /// When devices download it (the manifest's policy, as `ba pack publish` lists it).
    package var downloadPolicy: PackManifest.DownloadPolicy
    /// How the files were cut (pack format 1's chunker with these sizes).
    package var chunking: ContentDefinedChunker.Parameters
    package var files: [File]
    /// The version's bundles (nil in an index written without them: chunks are fetched one by one).
    package var bundles: [Bundle]?
    /// The BCP-47 language the pack is localized for (the manifest's `language`, as `ba pack
    /// publish` lists it); nil when it is not localized.
    package var language: String?

    /// The distinct chunks, in the order they first occur (the bundles' order).
    package var distinctChunks: [Chunk] {
        var seen: Set<String> = []
        var chunks: [Chunk] = []
        for file in files {
            for chunk in file.chunks where seen.insert(chunk.sha256).inserted { chunks.append(chunk) }
        }
        return chunks
    }

    /// Where each distinct chunk is in the bundles: (bundle, offset) by SHA-256; nil when the
    /// bundles do not add up to the distinct chunks (a damaged index: ``checkInstallable()``
    /// refuses it first; this stays safe on any index, a negative count or an overflow included).
    package var bundleLayout: [String: (bundle: Int, offset: Int64)]? {
        guard let bundles else { return nil }
        let chunks = distinctChunks
        var layout: [String: (bundle: Int, offset: Int64)] = [:]
        var next = 0
        for (number, bundle) in bundles.enumerated() {
            guard bundle.chunks >= 0, bundle.chunks <= chunks.count - next else { return nil }
            var offset: Int64 = 0
            for chunk in chunks[next..<(next + bundle.chunks)] {
                layout[chunk.sha256] = (number, offset)
                let (sum, overflow) = offset.addingReportingOverflow(Int64(chunk.storedLength))
                guard !overflow else { return nil }
                offset = sum
            }
            guard offset == bundle.size else { return nil }
            next += bundle.chunks
        }
        guard next == chunks.count else { return nil }
        return layout
    }

    /// The pack's download size: the stored bytes of its distinct chunks (Int64.max if they
    /// overflow it, which ``checkInstallable()`` refuses long before).
    package var downloadSize: Int64 {
        var seen: Set<String> = []
        var total: Int64 = 0
        for file in files {
            for chunk in file.chunks where seen.insert(chunk.sha256).inserted {
                let (sum, overflow) = total.addingReportingOverflow(Int64(chunk.storedLength))
                total = overflow ? .max : sum
            }
        }
        return total
    }

    /// The folder of a published pack's indexes, and a chunk's path, relative to `PUBLISH_DIR`.
    package static func indexPath(id: String, version: Int) -> String { PackNames.indexPath(id: id, version: version) }
    package static func chunkPath(_ sha256: String) -> String { "chunks/\(sha256.prefix(2))/\(sha256)" }
    package static func bundlePath(id: String, version: Int, number: Int) -> String {
        "packs/\(id)/\(version)-\(number).bundle"
    }
}

extension PackIndex {
    /// The index in the file at `path`, decoded and checked (``Document/decode(_:)``): a format 2
    /// root with its parts from ``PackIndexRoot/partsRoot(forIndexAt:)``, each checked against
    /// its SHA-256 before it is decompressed (``PackIndexRoot/files(of:frame:)``).
    package static func read(_ path: String) throws(PackError) -> PackIndex {
        try readWithDocument(path).index
    }

    /// ``read(_:)``'s index and the document it was read from (a format 2 root names its parts),
    /// from one read of the file.
    package static func readWithDocument(_ path: String) throws(PackError) -> (index: PackIndex, document: Document) {
        let bytes: [UInt8]
        do {
            bytes = try RegularFile.read(path, limit: PackLimits.maximumIndexBytes)
        } catch {
            throw PackError("cannot read the index \(path): \(error)")
        }
        do throws(PackError) {
            let document = try Document.decode(bytes)
            switch document {
            case .whole(let index): return (index, document)
            case .tree(let root):
                let parts = PackIndexRoot.partsRoot(forIndexAt: path)
                var files: [[File]] = []
                for part in root.parts {
                    let partPath = parts + "/" + PackIndexRoot.partPath(part.sha256)
                    let frame: [UInt8]
                    do { frame = try RegularFile.read(partPath, limit: part.storedLength) } catch {
                        throw PackError("cannot read the index part \(partPath): \(error)")
                    }
                    let decoded: Result<[File], PackError> = frame.withUnsafeBytes { buffer in
                        Result { () throws(PackError) in try root.files(of: part, frame: buffer) }
                    }
                    files.append(try decoded.get())
                }
                return (try root.assemble(files), document)
            }
        } catch {
            throw PackError("\(path): \(error)", code: error.code, operation: error.operation)
        }
    }
}
