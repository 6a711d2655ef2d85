#if canImport(Glibc)
    import Glibc
#endif

/// The app group's exclusive-control lock: a kernel `flock` on a lock file, shared by the app
/// and its extension's runner process.
///
/// The kernel releases it when the holding process dies, however it dies. The file is opened with
/// `O_CLOEXEC` so a spawned child never inherits (and keeps) the lock. Not Foundation-dependent,
/// so the runner can use it, and free of C modules (Glibc's `flock` is enough), so that
/// `BackgroundAssets` can use it without clients of that library needing another module map.
package final class ExclusiveControlLock: @unchecked Sendable {
    /// Why the lock could not be taken.
    package enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// Another process held it past the timeout.
        case notAcquired
        /// A system call failed; `call` names it.
        case system(call: String, errno: Int32)
        /// The lock file is a symbolic link, which is never followed (an extension may have
        /// planted it in its container): remove it.
        case symbolicLink(path: String)
        /// Something other than a regular file (a FIFO, a folder) is where the lock file should be.
        case notARegularFile(path: String)

        /// What went wrong, and what to do about it.
        package var description: String {
            switch self {
            case .notAcquired: "another process holds the exclusive-control lock"
            case .system(let call, let errno): "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
            case .symbolicLink(let path):
                "\(path) is a symbolic link; the exclusive-control lock is never taken through one (an extension may have planted it): remove it"
            case .notARegularFile(let path):
                "\(path) is not a regular file, so it cannot be the exclusive-control lock: remove it"
            }
        }
    }

    /// The lock file's name inside an app group container.
    package static let fileName = ".background-assets-exclusive-control.lock"

    /// The lock file of the app group container at `containerPath`.
    package static func path(inContainer containerPath: String) -> String {
        containerPath.hasSuffix("/") ? containerPath + fileName : containerPath + "/" + fileName
    }

    /// The app group container whose lock file is `lockPath`: the inverse of
    /// ``path(inContainer:)`` (without a trailing slash), or nil when `lockPath` does not end in
    /// ``fileName``. The runner uses it to tell the extension where its container is.
    package static func containerPath(ofLockPath lockPath: String) -> String? {
        let suffix = "/" + fileName
        guard lockPath.hasSuffix(suffix) else { return nil }
        let container = String(lockPath.dropLast(suffix.count))
        return container.isEmpty ? "/" : container
    }

    private let fd: Int32
    /// The lock file.
    package let path: String

    /// Opens (creating with mode 0600 if needed) the lock file. Does not lock.
    /// The corresponding C function is `open`.
    ///
    /// A symbolic link at `path` is never followed (`O_NOFOLLOW`): an extension can write its
    /// container and could plant one to have the lock file created, or locked, anywhere its user
    /// can write. It fails with ``Failure/symbolicLink(path:)``; anything else that is not a
    /// regular file fails with ``Failure/notARegularFile(path:)``.
    package init(path: String) throws(Failure) {
        var fd: Int32
        repeat {
            fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        } while fd < 0 && errno == EINTR
        guard fd >= 0 else {
            if errno == ELOOP { throw .symbolicLink(path: path) }
            throw .system(call: "open", errno: errno)
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw .notARegularFile(path: path)
        }
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// Acquires the lock.
    /// - Parameter timeoutMilliseconds: 0 tries once, a negative value waits as long as it takes,
    ///   anything else polls non-blocking attempts with a backoff (1 ms doubling to 50 ms) until it
    ///   has passed; a timed wait on a blocking `flock` is not reliable in a threaded process.
    /// The corresponding C function is `flock`.
    package func acquire(timeoutMilliseconds: Int64) throws(Failure) {
        if timeoutMilliseconds < 0 {
            guard Self.lockFile(fd, LOCK_EX) == 0 else { throw .system(call: "flock", errno: errno) }
            return
        }
        let deadline = Self.nowMilliseconds() + timeoutMilliseconds
        var backoff: Int64 = 1
        while true {
            if Self.lockFile(fd, LOCK_EX | LOCK_NB) == 0 { return }
            guard errno == EWOULDBLOCK else { throw .system(call: "flock", errno: errno) }
            let left = deadline - Self.nowMilliseconds()
            guard left > 0 else { throw .notAcquired }
            var pause = timespec(tv_sec: 0, tv_nsec: Int(min(backoff, left)) * 1_000_000)
            nanosleep(&pause, nil)
            backoff = min(backoff * 2, 50)
        }
    }

    /// Releases the lock (a no-op if not held). The corresponding C function is `flock`.
    package func release() throws(Failure) {
        guard Self.lockFile(fd, LOCK_UN) == 0 else { throw .system(call: "flock", errno: errno) }
    }

    /// `flock(fd, operation)`, retrying `EINTR`: 0, or -1 with `errno` set.
    private static func lockFile(_ fd: Int32, _ operation: Int32) -> Int32 {
        var status: Int32
        repeat {
            status = flock(fd, operation)
        } while status != 0 && errno == EINTR
        return status
    }

    static func nowMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
