import BAPackManifest
import Foundation

extension PackIndex {
    /// The index in `bytes`, decoded and checked (``checkInstallable()``): what a device believes
    /// of an index it fetched, and nothing before this has passed.
    ///
    /// - Throws: ``PackError`` with ``PackError/Code/invalidMetadata``, naming the first rule or
    ///   bound broken (``PackLimits``).
    package static func decode(_ bytes: [UInt8]) throws(PackError) -> PackIndex {
        let index = try JSONCoding.decodeBounded(
            PackIndex.self, from: bytes, limit: PackLimits.maximumIndexBytes, what: "the index",
            sizeCheck: "indexSize")
        // Format 2 is a root and parts (``PackIndexRoot``), never one document.
        guard index.formatVersion == 1 else {
            throw .invalid(
                "the index has format version \(index.formatVersion) in one document; this basd reads 1 (and 2 as a root with parts)",
                check: "format")
        }
        try index.checkInstallable()
        return index
    }

    /// Checks what a device relies on before it touches the disk or plans for this index, each
    /// size and sum overflow-checked against ``PackLimits``: the format, the pack's id and
    /// version; at most ``PackLimits/maximumFiles`` files, each path relative, `/`-separated, with
    /// no empty, `.` or `..` component, no NUL, at most ``PackLimits/maximumComponentBytes`` a
    /// component, ``PackLimits/maximumPathBytes`` and ``PackLimits/maximumDepth`` components in
    /// all, each path once, and no file that is also a folder of another (checked in time linear
    /// in the paths' bytes); permission bits only; each chunk 1 to
    /// ``PackLimits/maximumChunkLength`` bytes with a frame no longer than zstd's bound for it, a
    /// chunk name meaning one length; each file's chunks adding up to its size, the files to at
    /// most ``PackLimits/maximumPackBytes``; and the bundles, if any, holding the distinct chunks
    /// exactly, each its size, with a usable path.
    ///
    /// - Throws: ``PackError`` (``PackError/Code/invalidMetadata``) naming the first bad path or
    ///   value: an index comes from the network, and a hostile one must neither write outside its
    ///   folder nor make the device allocate, trap or loop on what it says.
    /// The pack id and version an index (or its root) names: a usable id, a version from 1 to
    /// ``PackLimits/maximumVersion``.
    static func checkIdentity(id: String, version: Int) throws(PackError) {
        guard PackManifest.isValidID(id) else {
            throw .invalid("the index names pack \"\(id)\", which is not a usable pack id", check: "id")
        }
        guard (1...PackLimits.maximumVersion).contains(version) else {
            throw .invalid(
                "the index of \(id) gives version \(version); versions are 1 to \(PackLimits.maximumVersion)",
                check: "version")
        }
    }

    package func checkInstallable() throws(PackError) {
        guard formatVersion == 1 || formatVersion == PackIndexRoot.format else {
            throw .invalid(
                "the index has format version \(formatVersion); this basd reads 1 and 2 (update basd)", check: "format")
        }
        try Self.checkIdentity(id: id, version: version)
        guard files.count <= PackLimits.maximumFiles else {
            throw .invalid(
                "the index of \(id) lists \(files.count) files; a pack has at most \(PackLimits.maximumFiles)",
                check: "files")
        }
        var tree = PathTree()
        var chunks: [String: (length: Int, stored: Int)] = [:]
        var distinct: [String] = []
        var references = 0
        var total: Int64 = 0
        for file in files {
            try tree.insert(file.path, in: id)
            guard file.mode & ~0o777 == 0 else {
                throw .invalid(
                    "the index of \(id) gives \"\(file.path)\" mode \(String(file.mode, radix: 8)); only permission bits (0644, 0755) are allowed",
                    check: "mode")
            }
            references += file.chunks.count
            guard references <= PackLimits.maximumChunkReferences else {
                throw .invalid(
                    "the index of \(id) lists more than \(PackLimits.maximumChunkReferences) chunks in its files",
                    check: "chunkReferences")
            }
            // At most 4 M chunks of at most 32 MiB: the sum stays far below Int64's range.
            var sum: Int64 = 0
            for chunk in file.chunks {
                guard (1...PackLimits.maximumChunkLength).contains(chunk.length),
                    (1...PackLimits.maximumStoredLength(chunk.length)).contains(chunk.storedLength),
                    Self.isSHA256(chunk.sha256)
                else {
                    throw .invalid(
                        "the index of \(id) has a malformed chunk in \"\(file.path)\" (length \(chunk.length), stored \(chunk.storedLength); a chunk is 1 to \(PackLimits.maximumChunkLength) bytes, its frame no longer than zstd's bound)",
                        check: "chunkLength")
                }
                if let known = chunks[chunk.sha256] {
                    guard known == (chunk.length, chunk.storedLength) else {
                        throw .invalid(
                            "the index of \(id) gives chunk \(chunk.sha256) two lengths, \(known.length) and \(chunk.length)",
                            check: "chunkLength")
                    }
                } else {
                    chunks[chunk.sha256] = (chunk.length, chunk.storedLength)
                    distinct.append(chunk.sha256)
                }
                sum += Int64(chunk.length)
            }
            guard file.size >= 0, sum == file.size, Self.isSHA256(file.sha256) else {
                throw .invalid(
                    "the index of \(id) gives \"\(file.path)\" size \(file.size) but chunks of \(sum) bytes, or a malformed SHA-256",
                    check: "fileSize")
            }
            total += file.size
            guard total <= PackLimits.maximumPackBytes else {
                throw .invalid(
                    "the files of \(id) hold more than \(PackLimits.maximumPackBytes) bytes, the most a pack may",
                    check: "packSize")
            }
        }
        if let bundles {
            try checkBundles(bundles, distinct: distinct, storedLength: { chunks[$0]?.stored ?? 0 })
        }
    }

    /// The bundles hold the distinct chunks exactly, in order: each a count from 0 and a size
    /// that is the sum of its chunks' frames, the counts adding up to the distinct chunks.
    private func checkBundles(
        _ bundles: [Bundle], distinct: [String], storedLength: (String) -> Int
    ) throws(PackError) {
        var next = 0
        for (number, bundle) in bundles.enumerated() {
            let components = bundle.path.split(separator: "/", omittingEmptySubsequences: false)
            guard bundle.path.utf8.count <= PackLimits.maximumPathBytes, !bundle.path.utf8.contains(0),
                components.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }),
                !bundle.path.contains(":"), !bundle.path.contains("?"), !bundle.path.contains("#")
            else {
                throw .invalid(
                    "bundle \(number) of \(id) has path \"\(bundle.path)\": a bundle path is relative to the publish folder, without '.', '..', ':', '?' or '#'",
                    check: "bundlePath")
            }
            guard bundle.chunks >= 0, bundle.chunks <= distinct.count - next else {
                throw .invalid(
                    "bundle \(number) of \(id) holds \(bundle.chunks) chunks, but only \(distinct.count - next) distinct chunks are left",
                    check: "bundleChunks")
            }
            guard (0...PackLimits.maximumBundleSize).contains(bundle.size) else {
                throw .invalid(
                    "bundle \(number) of \(id) is \(bundle.size) bytes; a bundle is at most \(PackLimits.maximumBundleSize)",
                    check: "bundleSize")
            }
            var size: Int64 = 0
            for sha256 in distinct[next..<(next + bundle.chunks)] { size += Int64(storedLength(sha256)) }
            guard size == bundle.size else {
                throw .invalid(
                    "bundle \(number) of \(id) says \(bundle.size) bytes, but its chunks' frames are \(size)",
                    check: "bundleSize")
            }
            next += bundle.chunks
        }
        guard next == distinct.count else {
            throw .invalid(
                "the bundles of \(id) hold \(next) chunks, not its \(distinct.count) distinct chunks",
                check: "bundleChunks")
        }
    }

    /// The components of a pack file path, or an error naming it (the rules of ``checkInstallable()``).
    static func checkPath(_ path: String, in id: String) throws(PackError) -> [Substring] {
        guard path.utf8.count <= PackLimits.maximumPathBytes else {
            throw .invalid(
                "the index of \(id) has a file path of \(path.utf8.count) bytes; at most \(PackLimits.maximumPathBytes)",
                check: "pathLength")
        }
        let components = path.split(separator: "/", omittingEmptySubsequences: false)
        guard components.count <= PackLimits.maximumDepth else {
            throw .invalid(
                "the index of \(id) has a file path \(components.count) components deep; at most \(PackLimits.maximumDepth)",
                check: "pathDepth")
        }
        let bad =
            path.isEmpty || path.utf8.contains(0)
            || components.contains {
                $0.isEmpty || $0 == "." || $0 == ".." || $0.utf8.count > PackLimits.maximumComponentBytes
            }
        guard !bad else {
            throw .invalid(
                "the index of \(id) has file path \"\(path)\": a path must be relative and '/'-separated, with no empty, '.' or '..' component",
                check: "path")
        }
        return components
    }

    static func isSHA256(_ text: String) -> Bool { PackNames.isSHA256(text) }
}

/// The files and folders of an index as a tree, so that a duplicate path or a file that is also
/// a folder is found in time linear in the paths' bytes (each component hashed once).
private struct PathTree {
    private struct Key: Hashable {
        var parent: Int
        var name: Substring
    }
    private var children: [Key: Int] = [:]
    /// Whether node N (0 is the root folder) is a file.
    private var isFile: [Bool] = [false]

    mutating func insert(_ path: String, in id: String) throws(PackError) {
        let components = try PackIndex.checkPath(path, in: id)
        var node = 0
        for (position, name) in components.enumerated() {
            let last = position == components.count - 1
            if let child = children[Key(parent: node, name: name)] {
                guard !isFile[child], !last else {
                    if last && isFile[child] {
                        throw .invalid("the index of \(id) lists \"\(path)\" twice", check: "path")
                    }
                    let clash = components[...position].joined(separator: "/")
                    throw .invalid(
                        "the index of \(id) has \"\(clash)\" as a file and as a folder of other files", check: "path")
                }
                node = child
            } else {
                children[Key(parent: node, name: name)] = isFile.count
                node = isFile.count
                isFile.append(last)
            }
        }
    }
}
