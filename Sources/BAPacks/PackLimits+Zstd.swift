import BAPackManifest
import CZstd

/// The bounds of compressed frames (libzstd's bound; the other bounds are in BAPackManifest).
extension PackLimits {
    /// The largest zstd frame a chunk of `length` bytes can have (libzstd's `ZSTD_compressBound`):
    /// a longer frame is a lie (and a larger allocation than the chunk needs).
    package static func maximumStoredLength(_ length: Int) -> Int {
        guard length >= 0, length <= maximumChunkLength else { return 0 }
        return ZSTD_compressBound(length)
    }

    /// The largest zstd frame an index part of `length` bytes (at most ``maximumIndexBytes``) can have.
    package static func maximumStoredIndexPart(_ length: Int) -> Int {
        guard length >= 0, length <= maximumIndexBytes else { return 0 }
        return ZSTD_compressBound(length)
    }
}
