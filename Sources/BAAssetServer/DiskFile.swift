import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A regular file under the server's root, opened for one response and sent with `sendfile` (`FileRegion`).
struct DiskFile: Sendable {
    /// The open file; whoever holds this value must close it exactly once.
    let handle: NIOFileHandle
    let size: Int
    let validators: Validators

    enum OpenResult: Sendable {
        case opened(DiskFile)
        /// Missing, not a regular file (a directory, a FIFO, a device), or a path through a non-directory.
        case notFound
        /// The server may not read it.
        case forbidden
        /// Any other failure; the `errno` value.
        case failed(CInt)
    }

    /// Opens and inspects `path`. This blocks (it is a file system call): run it on a thread pool, not on an
    /// event loop.
    ///
    /// The corresponding C functions are `open` and `fstat`. `O_NONBLOCK` keeps a FIFO planted under the root
    /// from blocking the open; it has no effect on regular files.
    static func openForReading(_ path: String) -> OpenResult {
        var fd: CInt
        repeat {
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        } while fd < 0 && errno == EINTR
        guard fd >= 0 else { return result(forErrno: errno) }

        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let error = errno
            _ = close(fd)
            return result(forErrno: error)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            _ = close(fd)
            return .notFound
        }
        let validators = Validators(
            etag: Validators.etag(
                inode: UInt64(info.st_ino), size: Int64(info.st_size),
                modifiedSeconds: Int64(info.st_mtim.tv_sec), modifiedNanoseconds: Int64(info.st_mtim.tv_nsec)),
            lastModified: Int64(info.st_mtim.tv_sec))
        let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: fd)
        return .opened(DiskFile(handle: handle, size: Int(info.st_size), validators: validators))
    }

    private static func result(forErrno error: CInt) -> OpenResult {
        switch error {
        case ENOENT, ENOTDIR, EISDIR, ENAMETOOLONG, ELOOP: .notFound
        case EACCES, EPERM: .forbidden
        default: .failed(error)
        }
    }
}
