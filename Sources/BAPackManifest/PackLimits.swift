/// The bounds a device holds pack metadata to (`docs/threat-model.md`, "Pack metadata"): an index
/// or download manifest comes from the network, so every size, count, depth and version in it is
/// checked against these, with overflow-checked arithmetic, before anything is allocated,
/// planned or written. `ba pack build` keeps to the same bounds, so a pack it builds is one a
/// device accepts. The bounds of compressed frames, which need libzstd, are in BAPacks
/// (`PackLimits+Zstd.swift`).
package enum PackLimits {
    /// The longest chunk (uncompressed): the builder's largest maximum (an average of 8 MiB cuts
    /// chunks of 32 MiB at most). A device holds one chunk of a job in memory at a time.
    package static let maximumChunkLength = 32 << 20
    /// The largest bundle: far above the builder's default of 16 MiB.
    package static let maximumBundleSize: Int64 = 1 << 30
    /// The most files in one pack.
    package static let maximumFiles = 100_000
    /// The most chunk references in one index (every file's chunk list together).
    package static let maximumChunkReferences = 4_000_000
    /// The longest file path in a pack, in UTF-8 bytes (a component: 255, as Linux allows).
    package static let maximumPathBytes = 1024
    package static let maximumComponentBytes = 255
    /// The deepest file path: components, the file's name included.
    package static let maximumDepth = 64
    /// The most bytes one pack's files hold (uncompressed), and the largest download size.
    package static let maximumPackBytes: Int64 = 1 << 40
    /// The highest pack version, index format or manifest sequence (2^53 − 1: exact in any JSON reader).
    package static let maximumVersion = (1 << 53) - 1
    /// The most packs one download manifest lists.
    package static let maximumPacks = 1000
    /// The largest index a device fetches (64 MiB holds 100,000 files and 500,000 chunks).
    package static let maximumIndexBytes = 64 << 20
    /// The most parts an index of format 2 has (``PackIndexRoot``): its fan-out (its depth is 2).
    package static let maximumIndexParts = 16_384
    /// The largest download manifest a device fetches.
    package static let maximumManifestBytes = 16 << 20
}
