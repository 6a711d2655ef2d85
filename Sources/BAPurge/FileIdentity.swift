#if canImport(Glibc)
    import Glibc
#endif

/// A file's device and inode: the name the kernel knows it by, whatever its path.
///
/// A rename on the same filesystem keeps it; a copy gets a new one. Inode numbers are reused once
/// a file is deleted, so a key alone does not prove it is the same file: ``FileIdentity`` adds the
/// size and modification time.
package struct FileKey: Hashable, Sendable, Codable, CustomStringConvertible {
    /// `st_dev`.
    package var device: UInt64
    /// `st_ino`.
    package var inode: UInt64

    /// Creates a key.
    package init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    package var description: String { "\(device):\(inode)" }
}

/// What `lstat` says about a regular file right now: its key, size and times.
package struct FileIdentity: Hashable, Sendable, Codable {
    /// The file's device and inode.
    package var key: FileKey
    /// `st_size` in bytes.
    package var size: Int64
    /// `st_mtim` in nanoseconds since 1970.
    package var modificationTimeNanoseconds: Int64
    /// `st_atim` in nanoseconds since 1970. With the usual `relatime` mount option the kernel
    /// updates it at most once a day (or when it is older than the mtime), so it is coarse; with
    /// `noatime` it never moves.
    package var accessTimeNanoseconds: Int64
    /// `st_nlink`: how many names (hard links) the file has.
    package var linkCount: UInt64

    /// Creates an identity from its parts.
    package init(
        key: FileKey, size: Int64, modificationTimeNanoseconds: Int64, accessTimeNanoseconds: Int64,
        linkCount: UInt64 = 1
    ) {
        self.key = key
        self.size = size
        self.modificationTimeNanoseconds = modificationTimeNanoseconds
        self.accessTimeNanoseconds = accessTimeNanoseconds
        self.linkCount = linkCount
    }

    /// The identity of the regular file at `path`, not following a final symlink.
    ///
    /// - Returns: The identity, or nil when nothing is at `path` (`ENOENT`, `ENOTDIR`).
    /// - Throws: ``PurgeError/Code/notARegularFile`` when `path` is a directory, symlink, socket, …;
    ///   ``PurgeError/Code/system`` when `lstat` fails otherwise. The corresponding C function is `lstat`.
    package static func read(path: String) throws(PurgeError) -> FileIdentity? {
        var info = stat()
        var result: Int32
        repeat { result = lstat(path, &info) } while result != 0 && errno == EINTR
        guard result == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw .system("lstat", path: path, errno: errno)
        }
        guard let identity = FileIdentity(info) else {
            throw PurgeError(.notARegularFile, "Not a regular file; only downloaded files are tracked.", path: path)
        }
        return identity
    }

    /// The identity in a `stat` result, or nil when it is not a regular file.
    init?(_ info: stat) {
        guard info.st_mode & S_IFMT == S_IFREG else { return nil }
        self.init(
            key: FileKey(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)),
            size: Int64(info.st_size),
            modificationTimeNanoseconds: Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec),
            accessTimeNanoseconds: Int64(info.st_atim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_atim.tv_nsec),
            linkCount: UInt64(info.st_nlink))
    }
}
