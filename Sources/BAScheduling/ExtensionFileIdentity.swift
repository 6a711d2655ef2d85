/// What an extension library file looked like: its path, size and modification time. A
/// quarantined extension is released when this changes, i.e. when a fixed build is installed.
///
/// Size and nanosecond modification time catch any rebuild or reinstall in practice; a tool that
/// replaces the file with one of the same size and preserves the old timestamp (`cp -p`,
/// `install -p`) is not seen as a change, and `ba apps --clear-quarantine` is the way out.
package struct ExtensionFileIdentity: Codable, Sendable, Equatable, Hashable {
    /// The path as given (not resolved).
    package var path: String
    /// The size in bytes.
    package var size: Int64
    /// The modification time, in nanoseconds since 1970-01-01 UTC.
    package var modificationTimeNanoseconds: Int64

    /// Creates an identity from known values (tests, or a stored record).
    package init(path: String, size: Int64, modificationTimeNanoseconds: Int64) {
        self.path = path
        self.size = size
        self.modificationTimeNanoseconds = modificationTimeNanoseconds
    }

    /// The file's identity now, following symbolic links (what `dlopen` would load).
    ///
    /// The corresponding C function is `stat`.
    ///
    /// - Parameter path: The extension library's path.
    /// - Returns: The identity, or nil when the file cannot be `stat`ed (missing, or a directory
    ///   on the way is not searchable).
    package static func current(path: String) -> ExtensionFileIdentity? {
        guard case .success(let status) = FileStatus.of(path) else { return nil }
        return ExtensionFileIdentity(
            path: path, size: status.size, modificationTimeNanoseconds: status.modificationTimeNanoseconds)
    }

    private enum CodingKeys: String, CodingKey {
        case path, size, modificationTimeNanoseconds
    }
}
