import BACore

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

    /// The index format; this build writes and reads 1.
    package var formatVersion: Int
    package var id: String
    package var version: Int
    package var userInfo: JSONValue?
    /// When devices download it (the manifest's policy, as `ba pack publish` lists it).
    package var downloadPolicy: PackManifest.DownloadPolicy
    /// How the files were cut (pack format 1's chunker with these sizes).
    package var chunking: ContentDefinedChunker.Parameters
    package var files: [File]

    /// The pack's download size: the stored bytes of its distinct chunks.
    package var downloadSize: Int64 {
        var seen: Set<String> = []
        var total: Int64 = 0
        for file in files {
            for chunk in file.chunks where seen.insert(chunk.sha256).inserted { total += Int64(chunk.storedLength) }
        }
        return total
    }

    /// The folder of a published pack's indexes, and a chunk's path, relative to `PUBLISH_DIR`.
    package static func indexPath(id: String, version: Int) -> String { "packs/\(id)/\(version).json" }
    package static func chunkPath(_ sha256: String) -> String { "chunks/\(sha256.prefix(2))/\(sha256)" }
}
