import BAPackManifest
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

// Calls by path, for what is not below a trusted pack folder: a publisher's own folders (`ba pack
// build`, `ba pack publish`) and `/proc` (who holds a version).
extension PackFileSystem {
    /// The names in the folder at `path`, sorted (`.` and `..` left out). A folder that is not
    /// there is empty when `missingIsEmpty`; any other failure is an error, never an empty
    /// listing: what publishes, verifies or prunes a folder must not take "cannot read" for
    /// "nothing there".
    ///
    /// The corresponding C functions are `opendir` and `readdir`.
    package static func names(in path: String, missingIsEmpty: Bool = false) throws(PackError) -> [String] {
        guard let directory = opendir(path) else {
            if errno == ENOENT && missingIsEmpty { return [] }
            throw .system("cannot list \(path)", call: "opendir")
        }
        defer { closedir(directory) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(directory) else {
                if errno != 0 { throw .system("cannot list \(path)", call: "readdir") }
                break
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { buffer in
                String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// Opens the file at `path` for reading; a symbolic link there is refused (`ELOOP`).
    ///
    /// The corresponding C function is `open` (`O_NOFOLLOW`).
    static func openForReading(_ path: String) throws(PackError) -> Descriptor {
        let file = try calling("open", "cannot open \(path)") {
            try FileDescriptor.open(FilePath(path), .readOnly, options: [.noFollow, .closeOnExec])
        }
        return Descriptor(file)
    }

    /// Creates the file `path` (0644; it must not exist) and writes `bytes` to it; a file left
    /// half-written by a failure is removed.
    ///
    /// The corresponding C functions are `open` (`O_CREAT | O_EXCL`) and `write`.
    static func createFile(_ path: String, bytes: [UInt8]) throws(PackError) {
        let file = try calling("open", "cannot create \(path)") {
            try FileDescriptor.open(
                FilePath(path), .writeOnly, options: [.create, .exclusiveCreate, .closeOnExec],
                permissions: FilePermissions(rawValue: 0o644))
        }
        do {
            _ = try calling("write", "cannot write \(path)") {
                try file.closeAfter { try bytes.withUnsafeBytes { try file.writeAll($0) } }
            }
        } catch {
            removeFile(path)
            throw error
        }
    }

    /// What is at `path`: the link itself if it is one and not `followLinks`; nil if nothing
    /// is there or it cannot be read.
    ///
    /// The corresponding C functions are `stat` and `lstat`.
    static func status(atPath path: String, followLinks: Bool) -> Stat? {
        try? Stat(FilePath(path), followTargetSymlink: followLinks)
    }

    /// Renames `path` to `newPath` (replacing a file there).
    ///
    /// The corresponding C function is `rename`.
    static func rename(_ path: String, to newPath: String) throws(PackError) {
        if case .failure(let errno) = valueOrErrno({ Glibc.rename(path, newPath) }) {
            throw PackError.system("cannot rename \(path) to \(newPath)", call: "rename", errno: errno)
        }
    }

    /// Removes the file (or link) at `path` if it is there; a failure is ignored (the caller
    /// tidies, and has nothing better to do).
    ///
    /// The corresponding C function is `unlink`.
    static func removeFile(_ path: String) {
        _ = valueOrErrno { unlink(path) }
    }

    /// What the symbolic link at `path` points to; nil if it is not one or cannot be read.
    ///
    /// The corresponding C function is `readlink` (`readlinkat` with `AT_FDCWD`).
    static func linkTarget(atPath path: String) -> String? {
        guard case .success(let target) = readLink(path, relativeTo: AT_FDCWD), !target.isEmpty else { return nil }
        return target
    }
}
