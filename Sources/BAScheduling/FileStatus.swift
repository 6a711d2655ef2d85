#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The few `stat` fields this module looks at.
struct FileStatus: Equatable, Sendable {
    /// A failed `stat`.
    struct Failure: Error, Equatable, Sendable {
        /// The `errno` it set.
        var code: Int32
        /// Whether the file (or a directory on its path) does not exist.
        var isMissing: Bool { code == ENOENT || code == ENOTDIR }
        /// `strerror`'s text.
        var message: String { String(cString: strerror(code)) }
    }

    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modificationTimeNanoseconds: Int64
    var changeTimeNanoseconds: Int64
    var isRegularFile: Bool

    /// The status of `path`, following symbolic links. The corresponding C function is `stat`.
    static func of(_ path: String) -> Result<FileStatus, Failure> {
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
