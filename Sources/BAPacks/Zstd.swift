import BAPackManifest
import CZstd

/// zstd frames through Debian's libzstd: how the chunk store keeps chunks.
package enum Zstd {
    /// `bytes` as one zstd frame (with its content size, so reading can check it).
    package static func compress(_ bytes: UnsafeRawBufferPointer, level: Int32 = 3) throws(PackError) -> [UInt8] {
        let bound = ZSTD_compressBound(bytes.count)
        var out = [UInt8](repeating: 0, count: bound)
        let written = out.withUnsafeMutableBytes {
            ZSTD_compress($0.baseAddress, bound, bytes.baseAddress, bytes.count, level)
        }
        guard ZSTD_isError(written) == 0 else {
            throw PackError("zstd could not compress a chunk: \(String(cString: ZSTD_getErrorName(written)))")
        }
        out.removeSubrange(written...)
        return out
    }

    /// The content of one zstd frame that must hold exactly `length` bytes; anything else (a
    /// different or unknown size, trailing bytes, a damaged frame) is an error, never a guess.
    package static func decompress(_ frame: UnsafeRawBufferPointer, length: Int) throws(PackError) -> [UInt8] {
        let declared = ZSTD_getFrameContentSize(frame.baseAddress, frame.count)
        guard declared == UInt64(length) else {
            throw PackError(
                "the chunk's zstd frame declares \(declared) bytes, not the \(length) the index gives",
                code: .badContent)
        }
        var out = [UInt8](repeating: 0, count: length)
        let read = out.withUnsafeMutableBytes {
            ZSTD_decompress($0.baseAddress, length, frame.baseAddress, frame.count)
        }
        guard ZSTD_isError(read) == 0 else {
            throw PackError(
                "the chunk's zstd frame is damaged: \(String(cString: ZSTD_getErrorName(read)))", code: .badContent)
        }
        guard read == length else {
            throw PackError("the chunk's zstd frame held \(read) bytes, not \(length)", code: .badContent)
        }
        return out
    }
}
