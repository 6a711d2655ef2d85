#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The few `stat` fields the scheduling state and the settings file look at.
package struct FileStatus: Equatable, Sendable {
    /// A failed `stat`.
    package struct Failure: Error, Equatable, Sendable {
        /// The `errno` it set.
        package var code: Int32
        /// Whether the file (or a directory on its path) does not exist.
        package var isMissing: Bool { code == ENOENT || code == ENOTDIR }
        /// `strerror`'s text.
        package var message: String { String(cString: strerror(code)) }
    }

    package var device: UInt64
    package var inode: UInt64
    package var size: Int64
    package var modificationTimeNanoseconds: Int64
    package var changeTimeNanoseconds: Int64
    package var isRegularFile: Bool

    /// The status of `path`, following symbolic links. The corresponding C function is `stat`.
    package static func of(_ path: String) -> Result<FileStatus, Failure> {
        var status = stat()
        guard stat(path, &status) == 0 else { return .failure(Failure(code: errno)) }
        return .success(
            FileStatus(
                device: UInt64(status.st_dev),
                inode: UInt64(status.st_ino),
                size: Int64(status.st_size),
                modificationTimeNanoseconds: nanoseconds(status.st_mtim),
                changeTimeNanoseconds: nanoseconds(status.st_ctim),
                isRegularFile: (status.st_mode & S_IFMT) == S_IFREG))
    }

    /// Nanoseconds since 1970, saturating (a timestamp past 2262 is not worth a trap).
    private static func nanoseconds(_ time: timespec) -> Int64 {
        let (seconds, overflow) = Int64(time.tv_sec).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? (time.tv_sec < 0 ? Int64.min : Int64.max) : seconds &+ Int64(time.tv_nsec)
    }
}
