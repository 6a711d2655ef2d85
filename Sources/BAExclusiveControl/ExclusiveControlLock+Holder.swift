#if canImport(Glibc)
    import Glibc
#endif

extension ExclusiveControlLock {
    /// A process holding an exclusive-control lock, as ``holder(path:)`` reports it.
    package struct Holder: Sendable, Hashable {
        /// The pid of the process that took the lock, as the kernel reports it; nil when the
        /// kernel cannot name it (a holder in another pid namespace). It is the process that called
        /// `flock`: if that process forked and died, a child that inherited the descriptor keeps the
        /// lock under the dead pid (``ExclusiveControlLock`` opens with `O_CLOEXEC`, so its own
        /// holders never hand the lock down).
        package var pid: Int32?

        /// Creates a holder.
        package init(pid: Int32?) { self.pid = pid }
    }

    /// Who holds the `flock` on the lock file at `path` right now, without taking it.
    ///
    /// Reads `/proc/locks` and matches the file's device and inode (from `stat`). Taking the lock
    /// to find out would make a contender's try-once acquire fail, so this never opens the file.
    /// The answer is a snapshot: the lock may change hands as soon as it returns.
    ///
    /// On overlayfs (kernel 4.19 and later) both `stat` and `/proc/locks` report the overlay's
    /// device and inode, so they match; a lock taken through the upper directory's own path is a
    /// different inode, and a different lock, for the kernel too.
    ///
    /// ```swift
    /// let path = ExclusiveControlLock.path(inContainer: container)
    /// if let holder = try ExclusiveControlLock.holder(path: path) {
    ///     print("held by pid \(holder.pid.map(String.init) ?? "?")")
    /// }
    /// ```
    ///
    /// - Returns: The holder, or nil when no process holds it (or the file does not exist).
    /// - Throws: ``Failure/system(call:errno:)`` when the file cannot be `stat`ed (other than
    ///   `ENOENT`) or `/proc/locks` cannot be read. The corresponding C functions are `stat` and `read`.
    package static func holder(path: String) throws(Failure) -> Holder? {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { return nil }
            throw .system(call: "lstat", errno: errno)
        }
        // Not followed: a link planted in the container names some other file's lock.
        if (status.st_mode & S_IFMT) == S_IFLNK { throw .symbolicLink(path: path) }
        let (major, minor) = deviceNumbers(UInt64(status.st_dev))
        let inode = UInt64(status.st_ino)
        let text = try readProcLocks()
        let holder = ProcLocksEntry.parse(text).first {
            $0.kind == "FLOCK" && !$0.isWaiter && $0.major == major && $0.minor == minor && $0.inode == inode
        }
        return holder.map { Holder(pid: $0.pid > 0 ? $0.pid : nil) }
    }

    /// A `dev_t`'s major and minor numbers, as glibc's `major()` and `minor()` macros split it
    /// (`bits/sysmacros.h`; macros, so Swift cannot call them, and this module takes no C module).
    package static func deviceNumbers(_ device: UInt64) -> (major: UInt32, minor: UInt32) {
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff)
        let minor = (device & 0xff) | ((device >> 12) & ~0xff)
        return (UInt32(truncatingIfNeeded: major), UInt32(truncatingIfNeeded: minor))
    }

    /// `/proc/locks` in full (its size reads as 0, so read to the end).
    private static func readProcLocks() throws(Failure) -> String {
        var fd: Int32
        repeat {
            fd = open("/proc/locks", O_RDONLY | O_CLOEXEC)
        } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw .system(call: "open", errno: errno) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw .system(call: "read", errno: errno) }
            if count == 0 { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
