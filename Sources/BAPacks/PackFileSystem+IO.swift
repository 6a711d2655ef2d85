import BAPackManifest
internal import CBASystem
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

// Reading, writing and the state of an open file: what the assembler does with a staging file.
extension PackFileSystem {
    /// Reads exactly `buffer.count` bytes at `offset`; false if the file ends first.
    ///
    /// The corresponding C function is `pread`.
    static func readFully(
        _ file: Descriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, display: String
    ) throws(PackError) -> Bool {
        var done = 0
        while done < buffer.count {
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[done...])
            let count = try calling("pread", "cannot read \(display)") {
                try file.file.read(fromAbsoluteOffset: offset + Int64(done), into: rest)
            }
            if count == 0 { return false }
            done += count
        }
        return true
    }

    /// Reads what the file gives from its current offset into `buffer` (up to `buffer.count`
    /// bytes; 0 at its end).
    ///
    /// The corresponding C function is `read`.
    static func read(
        _ file: Descriptor, into buffer: UnsafeMutableRawBufferPointer, display: String
    ) throws(PackError) -> Int {
        try calling("read", "cannot read \(display)") { try file.file.read(into: buffer) }
    }

    /// Writes all of `bytes` at `offset`.
    ///
    /// The corresponding C function is `pwrite`.
    static func writeFully(
        _ file: Descriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64, display: String
    ) throws(PackError) {
        _ = try calling("pwrite", "cannot write \(display)") {
            try file.file.writeAll(toAbsoluteOffset: offset, bytes)
        }
    }

    /// Whether `[offset, offset + length)` of `file` is all hole (`SEEK_DATA`): nothing was
    /// written there, so there is nothing to read. A file system without holes says no.
    ///
    /// The corresponding C function is `lseek`.
    static func isHole(_ file: Descriptor, offset: Int64, length: Int) -> Bool {
        do {
            let data = try file.file.seek(offset: offset, from: FileDescriptor.SeekOrigin(rawValue: seekData))
            return data >= offset + Int64(length)
        } catch {
            // ENXIO: no data at or after `offset`.
            return error as? Errno == .noSuchAddressOrDevice
        }
    }

    /// Flushes `file` (its data and what describes it) to the disk.
    ///
    /// The corresponding C function is `fsync`.
    static func sync(_ file: Descriptor, display: String) throws(PackError) {
        if case .failure(let errno) = valueOrErrno({ fsync(file.file.rawValue) }) {
            throw PackError.system("cannot fsync \(display)", call: "fsync", errno: errno)
        }
    }

    /// Sets the permission bits of `file` to `mode`; `failure` says what failed.
    ///
    /// The corresponding C function is `fchmod`.
    static func setMode(_ file: Descriptor, _ mode: mode_t, failure: String) throws(PackError) {
        if case .failure(let errno) = valueOrErrno({ fchmod(file.file.rawValue, mode) }) {
            throw PackError.system(failure, call: "fchmod", errno: errno)
        }
    }

    /// Sets the size of `file` (open for writing) to `size`: cut, or grown with a hole.
    ///
    /// The corresponding C function is `ftruncate`.
    static func resize(_ file: Descriptor, to size: Int64, display: String) throws(PackError) {
        try calling("ftruncate", "cannot size \(display) to \(size) bytes") { try file.file.resize(to: size) }
    }

    /// Starts the kernel's writeback of all of `file` without waiting for it: a head start for
    /// a later ``sync(_:display:)``, so its errors are ignored.
    ///
    /// The corresponding C function is `sync_file_range` (`SYNC_FILE_RANGE_WRITE`).
    static func startWriteback(_ file: Descriptor) {
        ba_sys_start_writeback(file.file.rawValue, 0, 0)
    }

    /// Linux's `SEEK_DATA` (glibc defines it only with `_GNU_SOURCE`, which Swift's Glibc module
    /// lacks, and swift-system names it only on Darwin and FreeBSD).
    private static let seekData: CInt = 3
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` for a body with typed throws (the standard library's rethrows `any Error`).
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(PackError) -> R) throws(PackError) -> R {
        let result: Result<R, PackError> = withUnsafeBytes { bytes in
            do throws(PackError) { return .success(try body(bytes)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// `withUnsafeMutableBytes` for a body with typed throws.
    mutating func withMutableBytes<R>(
        _ body: (UnsafeMutableRawBufferPointer) throws(PackError) -> R
    ) throws(PackError) -> R {
        let result: Result<R, PackError> = withUnsafeMutableBytes { bytes in
            do throws(PackError) { return .success(try body(bytes)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
