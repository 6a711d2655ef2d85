import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// What went wrong with a pack, said so a publisher or a user can fix it, with a typed ``code``
/// (and the ``errno`` and ``operation`` of a failed call) so that no caller matches message text.
///
/// ```swift
/// do { try staging.accept(sha256: sha, frame: frame) } catch where error.isNoSpace { wait() }
/// ```
package struct PackError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure.
    package enum Code: String, Sendable, Hashable, Codable {
        /// An index or download manifest breaks a rule or a bound of ``PackLimits`` (it came from
        /// the network: never believed before this check).
        case invalidMetadata
        /// Bytes from the CDN that are not what the index says (a damaged frame, another SHA-256,
        /// a short bundle): the CDN's fault, not the device's.
        case badContent
        /// A call on the file system failed: ``errno`` and ``operation`` say which.
        case fileSystem
        /// Anything else (a missing key, a library failure), said in the message.
        case other
    }

    package var code: Code
    /// The errno of the failed call, for ``Code/fileSystem``.
    package var errno: Errno?
    /// The syscall that failed (`openat`, `pwrite`, …) or the check that refused (`chunkLength`).
    package var operation: String?
    package var description: String

    package init(_ description: String, code: Code = .other, errno: Errno? = nil, operation: String? = nil) {
        self.description = description
        self.code = code
        self.errno = errno
        self.operation = operation
    }

    /// A failed call: `what` with the reason of `errno` (read at once), naming `call`.
    package static func system(_ what: String, call: String, errno value: Int32 = Glibc.errno) -> PackError {
        system(what, call: call, errno: Errno(rawValue: value))
    }

    /// A failed call: `what` with the reason of `errno` (swift-system's description), naming `call`.
    package static func system(_ what: String, call: String, errno: Errno) -> PackError {
        PackError("\(what): \(errno.description)", code: .fileSystem, errno: errno, operation: call)
    }

    /// Metadata that breaks `check` (a ``PackLimits`` rule), said as `message`.
    package static func invalid(_ message: String, check: String) -> PackError {
        PackError(message, code: .invalidMetadata, operation: check)
    }

    /// Whether writing failed for want of space (`ENOSPC`, `EDQUOT`: the file system or quota is
    /// full), which waits for space rather than failing.
    package var isNoSpace: Bool { errno == .noSpace || errno == .diskQuotaExceeded }
}
