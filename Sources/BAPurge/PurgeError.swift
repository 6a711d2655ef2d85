#if canImport(Glibc)
    import Glibc
#endif

/// Why a purge operation failed, with a message that says what to do about it.
///
/// Codes can grow without breaking callers; switch with a `default`.
package struct PurgeError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    package struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }

        /// A system call failed; ``PurgeError/call`` names it and ``PurgeError/errno`` says why.
        package static let system = Code(rawValue: "system")
        /// The path names something other than a regular file (a directory, a symlink, …).
        package static let notARegularFile = Code(rawValue: "notARegularFile")

        package var description: String { rawValue }
    }

    /// What kind of failure this is.
    package var code: Code
    /// What happened and how to fix it, for a person.
    package var message: String
    /// The path the failure concerns.
    package var path: String
    /// The C function that failed (`lstat`, `statvfs`, `unlink`), if any.
    package var call: String?
    /// The `errno` it set, if any.
    package var errno: Int32?

    /// Creates an error.
    package init(_ code: Code, _ message: String, path: String, call: String? = nil, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.call = call
        self.errno = errno
    }

    /// A failed system call on `path`, with `strerror`'s text.
    static func system(_ call: String, path: String, errno value: Int32) -> PurgeError {
        PurgeError(.system, "\(call) failed: \(String(cString: strerror(value)))", path: path, call: call, errno: value)
    }

    package var description: String { "\(code): \(message) (\(path))" }
}
