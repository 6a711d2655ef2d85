/// What it takes to assemble one version of a pack on a device, from the version it has (if any):
/// for each distinct chunk of the target, every place it goes and where its bytes come from.
///
/// I/O-free: it reads only the two indexes. ``PackStaging`` carries it out.
///
/// ```swift
/// let plan = PackPlan(target: v2, installed: v1)
/// // plan.fetch: the chunks to download; plan.fetchStoredBytes: their zstd bytes
/// ```
package struct PackPlan: Sendable, Hashable {
    /// One place a chunk goes: a file of the target (its index in `target.files`) at a byte offset.
    package struct Placement: Sendable, Hashable {
        package var file: Int
        package var offset: Int64
        package init(file: Int, offset: Int64) {
            self.file = file
            self.offset = offset
        }
    }

    /// Where a chunk's bytes come from.
    package enum Source: Sendable, Hashable {
        /// Read from the installed version: its file at `path` (as in its index), at `offset`
        /// (the first place the chunk occurs in that version).
        case installed(path: String, offset: Int64)
        /// Read from another pack's local version (a chunk two packs share): pack `pack`,
        /// version `version`, its file at `path`, at `offset`.
        case otherPack(pack: String, version: Int, path: String, offset: Int64)
        /// Downloaded (one zstd frame from the chunk store).
        case fetch
    }

    /// One distinct chunk of the target.
    package struct Item: Sendable, Hashable {
        package var chunk: PackIndex.Chunk
        /// Every place it goes in the target, in index order (a chunk may repeat within and
        /// across files).
        package var placements: [Placement]
        package var source: Source
    }

    /// The version to assemble.
    package let target: PackIndex
    /// The version on disk that chunks are taken from, if any.
    package let installedVersion: Int?
    /// The target's distinct chunks, in the order they first occur in its index.
    package let items: [Item]
    private let itemBySHA256: [String: Int]

    /// Uncompressed bytes of the target's files (what a finished staging holds).
    package let totalBytes: Int64
    /// zstd bytes to download: the stored length of every chunk to fetch, each once.
    package let fetchStoredBytes: Int64
    /// Uncompressed bytes of the distinct chunks to fetch, each once.
    package let fetchBytes: Int64
    /// Uncompressed bytes of the distinct chunks taken from the installed version, each once.
    package let reusedBytes: Int64
    /// Target files the installed version has whole (same SHA-256, size and mode), by target file
    /// index: the installed file's path. Staging links them instead of copying their chunks.
    package let unchangedFiles: [Int: String]

    /// Plans `target` from `installed` (the complete version on disk, or nil for a fresh install).
    ///
    /// A chunk counts as in the installed version only with the same SHA-256 and length. The
    /// indexes are not checked here (``PackIndex/checkInstallable()`` does that).
    ///
    /// `others` are the local versions of the app's other packs: a chunk the installed version
    /// lacks is taken from one of them if it has it (packs often share files).
    package init(target: PackIndex, installed: PackIndex?, others: [PackIndex] = []) {
        var inOthers: [String: (pack: String, version: Int, path: String, offset: Int64, length: Int)] = [:]
        for other in others where other.id != target.id {
            for file in other.files {
                var offset: Int64 = 0
                for chunk in file.chunks {
                    if inOthers[chunk.sha256] == nil {
                        inOthers[chunk.sha256] = (other.id, other.version, file.path, offset, chunk.length)
                    }
                    offset += Int64(chunk.length)
                }
            }
        }
        var firstInInstalled: [String: (path: String, offset: Int64, length: Int)] = [:]
        for file in installed?.files ?? [] {
            var offset: Int64 = 0
            for chunk in file.chunks {
                if firstInInstalled[chunk.sha256] == nil {
                    firstInInstalled[chunk.sha256] = (file.path, offset, chunk.length)
                }
                offset += Int64(chunk.length)
            }
        }
        var wholeFiles: [String: String] = [:]
        for file in installed?.files ?? [] {
            wholeFiles["\(file.sha256) \(file.size) \(file.mode)"] =
                wholeFiles["\(file.sha256) \(file.size) \(file.mode)"] ?? file.path
        }
        var unchanged: [Int: String] = [:]
        var items: [Item] = []
        var itemBySHA256: [String: Int] = [:]
        var total: Int64 = 0
        for (fileIndex, file) in target.files.enumerated() {
            var offset: Int64 = 0
            for chunk in file.chunks {
                let placement = Placement(file: fileIndex, offset: offset)
                if let index = itemBySHA256[chunk.sha256] {
                    items[index].placements.append(placement)
                } else {
                    var source = Source.fetch
                    if let found = firstInInstalled[chunk.sha256], found.length == chunk.length {
                        source = .installed(path: found.path, offset: found.offset)
                    } else if let found = inOthers[chunk.sha256], found.length == chunk.length {
                        source = .otherPack(
                            pack: found.pack, version: found.version, path: found.path, offset: found.offset)
                    }
                    itemBySHA256[chunk.sha256] = items.count
                    items.append(Item(chunk: chunk, placements: [placement], source: source))
                }
                offset += Int64(chunk.length)
            }
            total += file.size
            if file.size > 0, let path = wholeFiles["\(file.sha256) \(file.size) \(file.mode)"] {
                unchanged[fileIndex] = path
            }
        }
        self.unchangedFiles = unchanged
        self.target = target
        self.installedVersion = installed?.version
        self.items = items
        self.itemBySHA256 = itemBySHA256
        self.totalBytes = total
        var fetchStored: Int64 = 0
        var fetchBytes: Int64 = 0
        var reused: Int64 = 0
        for item in items {
            if item.source == .fetch {
                fetchStored += Int64(item.chunk.storedLength)
                fetchBytes += Int64(item.chunk.length)
            } else {
                reused += Int64(item.chunk.length)
            }
        }
        self.fetchStoredBytes = fetchStored
        self.fetchBytes = fetchBytes
        self.reusedBytes = reused
    }

    /// The distinct chunks to download, in the order they first occur in the target's index.
    package var fetch: [PackIndex.Chunk] { items.filter { $0.source == .fetch }.map(\.chunk) }

    /// The distinct chunks the installed version has, in target index order.
    package var reused: [PackIndex.Chunk] { items.filter { $0.source != .fetch }.map(\.chunk) }

    /// The plan for the chunk named `sha256`, or nil if the target has no such chunk.
    package func item(_ sha256: String) -> Item? { itemBySHA256[sha256].map { items[$0] } }

    /// Where `items[i]` is, by its chunk's SHA-256.
    package func itemIndex(_ sha256: String) -> Int? { itemBySHA256[sha256] }
}
