import BAHashing
import BAPackManifest
import Foundation
import SystemPackage

/// `ba pack build`: cuts a pack's files into content-defined chunks, writes each new chunk once
/// (zstd) into the publish folder's chunk store, and writes the version's index.
///
/// A chunk already in the store (from another file, pack or version) is not written again. A
/// version once published is immutable: building it again with different content is refused.
/// Files must be regular files inside the root; a symbolic link is refused, never followed.
package struct PackBuilder {
    /// What a build did.
    package struct Report: Sendable, Hashable {
        package var index: PackIndex
        /// Chunks written to the store by this build.
        package var chunksWritten: Int
        /// Chunks the store already had.
        package var chunksReused: Int
        /// Bytes of the chunks written, compressed.
        package var bytesWritten: Int64
    }

    package let parameters: ContentDefinedChunker.Parameters
    /// zstd's level (3 is its default: fast, and most game assets are compressed already).
    package var compressionLevel: Int32 = 3
    /// A bundle is cut once it holds this many bytes (the last one may be smaller); 0 writes none.
    package var bundleSize: Int64 = 16 << 20
    /// The index format written: 2 (a root and parts, ``PackIndexRoot``: an update fetches the
    /// parts that changed) or 1 (one document, which basd before format 2 reads).
    package var indexFormat = PackIndexRoot.format

    package init(parameters: ContentDefinedChunker.Parameters) { self.parameters = parameters }

    /// Builds version `version` of `manifest`'s pack from the files under `root` into `publishDirectory`.
    package func build(
        _ manifest: PackManifest, root: String, version: Int, publishDirectory: String
    ) throws(PackError) -> Report {
        guard (1...PackLimits.maximumVersion).contains(version) else {
            throw PackError("--version must be 1 to \(PackLimits.maximumVersion); got \(version)")
        }
        // Devices refuse chunks above PackLimits.maximumChunkLength: never build one.
        guard parameters.maximum <= PackLimits.maximumChunkLength else {
            throw PackError(
                "chunks of up to \(parameters.maximum) bytes would be refused by devices, which take at most \(PackLimits.maximumChunkLength): use --chunk-size \(PackLimits.maximumChunkLength / 4) or less"
            )
        }
        let paths = try Self.files(of: manifest, root: root)
        guard !paths.isEmpty else {
            throw PackError("the file selectors of \(manifest.assetPackID) match no files under \(root)")
        }
        guard paths.count <= PackLimits.maximumFiles else {
            throw PackError(
                "\(manifest.assetPackID) selects \(paths.count) files; devices take at most \(PackLimits.maximumFiles) in a pack: split it into packs"
            )
        }
        let chunker = ContentDefinedChunker(parameters)
        var report = Report(
            index: PackIndex(
                formatVersion: indexFormat == 1 ? 1 : PackIndexRoot.format, id: manifest.assetPackID, version: version,
                userInfo: manifest.userInfo,
                downloadPolicy: manifest.downloadPolicy, chunking: parameters, files: [], language: manifest.language),
            chunksWritten: 0, chunksReused: 0, bytesWritten: 0)
        for (path, source) in paths {
            report.index.files.append(
                try add(path, source: source, root: root, chunker: chunker, into: publishDirectory, &report))
        }
        report.index.bundles = bundleSize > 0 ? bundles(of: report.index) : nil
        // What a device checks (PackIndex.decode), checked before the index is written: a pack
        // this builds is one devices accept (paths, sizes, counts within PackLimits).
        try report.index.checkInstallable()
        try writeIndex(report.index, publishDirectory: publishDirectory)
        return report
    }

    /// The selected regular files, relative to `root`, sorted, each once.
    static func select(_ selectors: [PackManifest.FileSelector], root: String) throws(PackError) -> [String] {
        var found: Set<String> = []
        for selector in selectors {
            switch selector {
            case .file(let path):
                try requireRegularFile(path, root: root)
                found.insert(path)
            case .directory(let path):
                guard PackFileSystem.status(atPath: root + "/" + path, followLinks: false)?.type == .directory else {
                    throw PackError("directory selector \"\(path)\" names no directory under \(root)")
                }
                try walk(path, root: root, into: &found)
            }
        }
        return found.sorted()
    }

    static func walk(_ directory: String, root: String, into found: inout Set<String>) throws(PackError) {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: root + "/" + directory)
        } catch {
            throw PackError("cannot read \(root)/\(directory): \(error.localizedDescription)")
        }
        for name in names.sorted() {
            let path = directory + "/" + name
            guard let info = PackFileSystem.status(atPath: root + "/" + path, followLinks: false) else {
                throw PackError("cannot read \(root)/\(path)")
            }
            switch info.type {
            case .directory: try walk(path, root: root, into: &found)
            case .regular: found.insert(path)
            default:
                throw PackError(
                    "\(root)/\(path) is not a regular file or directory (a symbolic link?); pack files must be regular files"
                )
            }
        }
    }

    static func requireRegularFile(_ path: String, root: String) throws(PackError) {
        guard let info = PackFileSystem.status(atPath: root + "/" + path, followLinks: false) else {
            throw PackError("file selector \"\(path)\" names no file under \(root)")
        }
        guard info.type == .regular else {
            throw PackError(
                "\(root)/\(path) is not a regular file (a symbolic link?); pack files must be regular files")
        }
    }

    /// Cuts one file, stores its new chunks, and describes it.
    private func add(
        _ path: String, source: String, root: String, chunker: ContentDefinedChunker, into publishDirectory: String,
        _ report: inout Report
    ) throws(PackError) -> PackIndex.File {
        let full = root + "/" + source
        let opened = try PackFileSystem.openForReading(full)
        let info = try PackFileSystem.status(of: opened, display: full)
        var file = PackIndex.File(
            path: path, size: 0, mode: info.mode.rawValue & 0o111 != 0 ? 0o755 : 0o644, sha256: "", chunks: [])
        let digest = SHA256Hasher()
        let window = max(4 << 20, 2 * parameters.maximum)
        var buffer = [UInt8](repeating: 0, count: window)
        var start = 0
        var end = 0
        var atEnd = false
        while true {
            // Keep at least a maximum chunk in the buffer, until the file ends.
            if !atEnd && end - start < parameters.maximum {
                if start > 0 {
                    buffer.withUnsafeMutableBytes { bytes in
                        _ = memmove(bytes.baseAddress!, bytes.baseAddress! + start, end - start)
                    }
                    end -= start
                    start = 0
                }
                while end < window && !atEnd {
                    let count = try buffer.withMutableBytes { bytes throws(PackError) in
                        try PackFileSystem.read(
                            opened, into: UnsafeMutableRawBufferPointer(rebasing: bytes[end...]), display: full)
                    }
                    if count == 0 { atEnd = true } else { end += count }
                }
            }
            if start == end { break }
            let stored: Result<PackIndex.Chunk, PackError> = buffer.withUnsafeBytes { bytes in
                let rest = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
                let length = chunker.chunkLength(of: rest)
                let piece = UnsafeRawBufferPointer(rebasing: rest[0..<length])
                digest.update(piece)
                do throws(PackError) {
                    return .success(try store(piece, publishDirectory: publishDirectory, &report))
                } catch {
                    return .failure(error)
                }
            }
            let chunk = try stored.get()
            file.chunks.append(chunk)
            file.size += Int64(chunk.length)
            start += chunk.length
        }
        file.sha256 = digest.finalizeHex()
        return file
    }

    /// Writes a chunk into the store unless it is there (atomically: a temporary file renamed).
    private func store(
        _ bytes: UnsafeRawBufferPointer, publishDirectory: String, _ report: inout Report
    ) throws(PackError) -> PackIndex.Chunk {
        let sha256 = SHA256Hasher.hex(of: bytes)
        let path = publishDirectory + "/" + PackIndex.chunkPath(sha256)
        if let stored = PackFileSystem.status(atPath: path, followLinks: true)?.size, stored > 0 {
            report.chunksReused += 1
            return PackIndex.Chunk(sha256: sha256, length: bytes.count, storedLength: Int(stored))
        }
        let frame = try Zstd.compress(bytes, level: compressionLevel)
        try Self.writeAtomically(frame, to: path)
        report.chunksWritten += 1
        report.bytesWritten += Int64(frame.count)
        return PackIndex.Chunk(sha256: sha256, length: bytes.count, storedLength: frame.count)
    }

    /// The version's distinct chunks cut into bundles of about ``bundleSize`` bytes.
    private func bundles(of index: PackIndex) -> [PackIndex.Bundle] {
        var bundles: [PackIndex.Bundle] = []
        var current = PackIndex.Bundle(path: "", size: 0, chunks: 0)
        for chunk in index.distinctChunks {
            current.size += Int64(chunk.storedLength)
            current.chunks += 1
            if current.size >= bundleSize {
                current.path = PackIndex.bundlePath(id: index.id, version: index.version, number: bundles.count)
                bundles.append(current)
                current = PackIndex.Bundle(path: "", size: 0, chunks: 0)
            }
        }
        if current.chunks > 0 {
            current.path = PackIndex.bundlePath(id: index.id, version: index.version, number: bundles.count)
            bundles.append(current)
        }
        return bundles
    }

    /// Writes each bundle from the chunk store (atomically each); before the index, so no index
    /// is ever served whose bundles are missing.
    private func writeBundles(_ index: PackIndex, publishDirectory: String) throws(PackError) {
        let chunks = index.distinctChunks
        var next = 0
        for bundle in index.bundles ?? [] {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(Int(bundle.size))
            for chunk in chunks[next..<(next + bundle.chunks)] {
                let path = publishDirectory + "/" + PackIndex.chunkPath(chunk.sha256)
                guard let frame = FileManager.default.contents(atPath: path), frame.count == chunk.storedLength else {
                    throw PackError("cannot read chunk \(path) for \(bundle.path) (or it changed): build again")
                }
                bytes += frame
            }
            next += bundle.chunks
            try Self.writeAtomically(bytes, to: publishDirectory + "/" + bundle.path)
        }
    }

    /// The index, refused if that version is published already with other content.
    private func writeIndex(_ index: PackIndex, publishDirectory: String) throws(PackError) {
        let bytes: [UInt8]
        var parts: [(sha256: String, frame: [UInt8])] = []
        do {
            if indexFormat == PackIndexRoot.format {
                let tree = try PackIndexRoot.split(index)
                parts = tree.frames
                bytes = Array(try JSONCoding.encoder.encode(tree.root))
            } else {
                bytes = Array(try JSONCoding.encoder.encode(index))
            }
        } catch {
            throw PackError("cannot encode the index of \(index.id): \(error)")
        }
        guard bytes.count <= PackLimits.maximumIndexBytes else {
            throw PackError(
                "the index of \(index.id) is \(bytes.count) bytes; devices take at most \(PackLimits.maximumIndexBytes): split the pack"
            )
        }
        let path = publishDirectory + "/" + PackIndex.indexPath(id: index.id, version: index.version)
        if let existing = FileManager.default.contents(atPath: path) {
            guard Array(existing) == bytes else {
                throw PackError(
                    "version \(index.version) of \(index.id) is already published (\(path)) with other content; "
                        + "published versions never change: build it as --version \(index.version + 1)")
            }
            return
        }
        // Content first, the root last: no root is ever served whose parts or bundles are missing.
        for part in parts {
            let partPath = publishDirectory + "/" + PackIndexRoot.partPath(part.sha256)
            if PackFileSystem.status(atPath: partPath, followLinks: true)?.size == Int64(part.frame.count) { continue }
            try Self.writeAtomically(part.frame, to: partPath)
        }
        try writeBundles(index, publishDirectory: publishDirectory)
        try Self.writeAtomically(bytes, to: path)
        if indexFormat == PackIndexRoot.format {
            // What a device does with it, from the folder's files: a tree this writes is one it reads.
            _ = try PackIndex.read(path)
        }
    }

    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(PackError) {
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw PackError("cannot create \(directory): \(error.localizedDescription)")
        }
        let temporary = directory + "/.tmp-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        try PackFileSystem.createFile(temporary, bytes: bytes)
        do {
            try PackFileSystem.rename(temporary, to: path)
        } catch {
            PackFileSystem.removeFile(temporary)
            throw error
        }
    }
}
