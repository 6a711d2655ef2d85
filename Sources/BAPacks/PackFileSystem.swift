import BAPackManifest
internal import CBASystem
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// The one place where BAPacks' file work talks to the kernel: each call retries `EINTR` and
/// throws a ``PackError`` (``PackError/Code/fileSystem``) that carries the call's `Errno`, names
/// the call and says which path. Calls go through swift-system's `FileDescriptor` where it has
/// them (`open`, `read`/`pread`, `write`/`pwrite`, `lseek`, `ftruncate`, `fstat`, `fstatat`,
/// `dup`, `close`); the `*at` calls it lacks (`openat`, `mkdirat`, `unlinkat`, `renameat`,
/// `linkat`, `symlinkat`, `readlinkat`) and `fchmod`, `fsync` are made here through Glibc, on a
/// ``Descriptor``'s `FileDescriptor`.
///
/// Every open below a trusted starting folder goes one component at a time with `O_NOFOLLOW`:
/// a symbolic link planted in a pack folder (by a process of the same user, an app that may not
/// write elsewhere) is refused, never followed.
///
/// ```swift
/// let packs = try PackFileSystem.openFolders(["packs", "ID"], in: PackFileSystem.openRoot(root), display: root)
/// if let file = try PackFileSystem.openFile("1/a.bin", in: packs, .readOnly, display: "…/a.bin", missingIsNil: true) {
///     _ = try PackFileSystem.readFully(file, into: buffer, at: 0, display: "…/a.bin")
/// }
/// ```
enum PackFileSystem {
    /// Opens the folder at `path` itself (links in it followed: the caller gives it).
    ///
    /// The corresponding C function is `open` (`O_DIRECTORY`).
    static func openRoot(_ path: String) throws(PackError) -> Descriptor {
        let file = try calling("open", "cannot open the folder \(path)") {
            try FileDescriptor.open(FilePath(path), .readOnly, options: [.directory, .closeOnExec])
        }
        return Descriptor(file)
    }

    /// Opens folder `name` in `parent`, creating it (0755) if `create`, never through a link; if
    /// `writable`, a read-only folder is given its owner's write bit back.
    ///
    /// The corresponding C functions are `mkdirat` and `openat` (`O_DIRECTORY | O_NOFOLLOW`).
    static func openFolder(
        _ name: String, in parent: Descriptor, create: Bool = false, writable: Bool = false, display: String
    ) throws(PackError) -> Descriptor {
        if create {
            switch valueOrErrno({ mkdirat(parent.file.rawValue, name, 0o755) }) {
            case .success:
                // The new entry is durable before anything is written in it; a failure here only
                // loses that head start (finish() syncs the folders it fills).
                _ = valueOrErrno { fsync(parent.file.rawValue) }
            case .failure(.fileExists): break
            case .failure(let errno):
                throw PackError.system("cannot create the folder \(display)", call: "mkdirat", errno: errno)
            }
        }
        let opened = valueOrErrno {
            openat(parent.file.rawValue, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        }
        let folder: Descriptor
        switch opened {
        case .success(let fd): folder = Descriptor(FileDescriptor(rawValue: fd))
        case .failure(let errno) where errno == .tooManySymbolicLinkLevels || errno == .notDirectory:
            throw PackError("\(display) is a symbolic link or not a folder; refused (remove it)")
        case .failure(let errno):
            throw PackError.system("cannot open the folder \(display)", call: "openat", errno: errno)
        }
        if writable {
            let info = try status(of: folder, display: display)
            if info.mode.rawValue & S_IWUSR == 0 {
                try setMode(folder, 0o755, failure: "cannot make \(display) writable")
            }
        }
        return folder
    }

    /// Opens the folder `components` below `base`, one component at a time without following links.
    static func openFolders(
        _ components: some Collection<Substring>, in base: Descriptor, create: Bool = false, writable: Bool = false,
        display: String
    ) throws(PackError) -> Descriptor {
        var folder = base
        var shown = display
        for component in components {
            shown += "/" + component
            folder = try openFolder(String(component), in: folder, create: create, writable: writable, display: shown)
        }
        return folder
    }

    /// Opens the regular file `name` in `folder` for `access` with `options` (plus `O_NOFOLLOW`,
    /// and 0644 for a file `.create` makes): a link, a folder or a device there is refused.
    /// Returns nil when it does not exist and `missingIsNil`.
    ///
    /// The corresponding C function is `openat`.
    static func openFile(
        _ name: String, in folder: Descriptor, _ access: FileDescriptor.AccessMode,
        options: FileDescriptor.OpenOptions = [], display: String, missingIsNil: Bool = false
    ) throws(PackError) -> Descriptor? {
        // O_NONBLOCK: a FIFO planted there must not hang the open; it has no effect on a regular file.
        let flags = access.rawValue | options.rawValue | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC
        let file: Descriptor
        switch valueOrErrno({ openat(folder.file.rawValue, name, flags, 0o644) }) {
        case .success(let fd): file = Descriptor(FileDescriptor(rawValue: fd))
        case .failure(.noSuchFileOrDirectory) where missingIsNil: return nil
        case .failure(.tooManySymbolicLinkLevels):
            throw PackError("\(display) is a symbolic link; refused (remove it)")
        case .failure(let errno): throw PackError.system("cannot open \(display)", call: "openat", errno: errno)
        }
        guard (try? status(of: file, display: display))?.type == .regular else {
            throw PackError("\(display) is not a regular file; refused (remove it)")
        }
        return file
    }

    /// What `name` in `folder` is, not following a link there; nil if absent.
    ///
    /// The corresponding C function is `fstatat` (`AT_SYMLINK_NOFOLLOW`).
    static func status(_ name: String, in folder: Descriptor, display: String) throws(PackError) -> Stat? {
        do {
            return try Stat(FilePath(name), relativeTo: folder.file, flags: .symlinkNoFollow)
        } catch .noSuchFileOrDirectory {
            return nil
        } catch {
            throw PackError.system("cannot stat \(display)", call: "fstatat", errno: error)
        }
    }

    /// What the open `file` is.
    ///
    /// The corresponding C function is `fstat`.
    static func status(of file: Descriptor, display: String) throws(PackError) -> Stat {
        do { return try file.file.stat() } catch {
            throw PackError.system("cannot stat \(display)", call: "fstat", errno: error)
        }
    }

    /// The names in an open folder (not `.` and `..`).
    ///
    /// The corresponding C functions are `dup` and `fdopendir`.
    static func names(in folder: Descriptor, display: String) throws(PackError) -> [String] {
        // The stream owns (and closes) a copy, so that `folder` stays open for its owner.
        let copy = try calling("dup", "cannot list \(display)") { try folder.file.duplicate() }
        guard let stream = fdopendir(copy.rawValue) else {
            let error = PackError.system("cannot list \(display)", call: "fdopendir")
            try? copy.close()
            throw error
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Removes `name` in `folder` and everything under it, never following a link (a link is
    /// removed as a link); read-only folders get their owner's write bit first. Absent is fine.
    static func removeTree(_ name: String, in folder: Descriptor, display: String) throws(PackError) {
        guard let info = try status(name, in: folder, display: display) else { return }
        if info.type == .directory {
            let inner = try openFolder(name, in: folder, writable: true, display: display)
            for child in try names(in: inner, display: display) {
                try removeTree(child, in: inner, display: display + "/" + child)
            }
            try remove(name, in: folder, isFolder: true, display: display)
        } else {
            try remove(name, in: folder, display: display)
        }
    }

    /// Removes the entry `name` in `folder` (a link as a link): an empty folder if `isFolder`,
    /// else anything but a folder. Absent is fine when `absentIsFine`.
    ///
    /// The corresponding C function is `unlinkat`.
    static func remove(
        _ name: String, in folder: Descriptor, isFolder: Bool = false, absentIsFine: Bool = true, display: String
    ) throws(PackError) {
        switch valueOrErrno({ unlinkat(folder.file.rawValue, name, isFolder ? AT_REMOVEDIR : 0) }) {
        case .success: return
        case .failure(.noSuchFileOrDirectory) where absentIsFine: return
        case .failure(let errno):
            let what = isFolder ? "cannot remove the folder \(display)" : "cannot remove \(display)"
            throw PackError.system(what, call: "unlinkat", errno: errno)
        }
    }

    /// Renames `name` to `newName`, both in `folder` (replacing a file or an empty folder there).
    /// `failure` says what failed; an absent `name` is fine when `absentIsFine`.
    ///
    /// The corresponding C function is `renameat`.
    static func rename(
        _ name: String, to newName: String, in folder: Descriptor, absentIsFine: Bool = false, failure: String
    ) throws(PackError) {
        let fd = folder.file.rawValue
        switch valueOrErrno({ renameat(fd, name, fd, newName) }) {
        case .success: return
        case .failure(.noSuchFileOrDirectory) where absentIsFine: return
        case .failure(let errno): throw PackError.system(failure, call: "renameat", errno: errno)
        }
    }

    /// Swaps the entries `name` and `other` in `folder` in one step: a reader sees the old pair
    /// or the new one. Both must exist; a file system without `RENAME_EXCHANGE` fails (`EINVAL`).
    ///
    /// The corresponding C function is `renameat2` (`RENAME_EXCHANGE`).
    static func exchange(_ name: String, with other: String, in folder: Descriptor, failure: String) throws(PackError) {
        let fd = folder.file.rawValue
        if case .failure(let errno) = valueOrErrno({ ba_sys_rename_exchange(fd, name, fd, other) }) {
            throw PackError.system(failure, call: "renameat2", errno: errno)
        }
    }

    /// Makes `newName` in `folder` another name (a hard link) of `name` in `sourceFolder`,
    /// without following a link at `name`.
    ///
    /// The corresponding C function is `linkat`.
    static func hardLink(
        _ name: String, in sourceFolder: Descriptor, as newName: String, in folder: Descriptor, display: String
    ) throws(PackError) {
        let result = valueOrErrno { linkat(sourceFolder.file.rawValue, name, folder.file.rawValue, newName, 0) }
        if case .failure(let errno) = result {
            throw PackError.system("cannot link \(display)", call: "linkat", errno: errno)
        }
    }

    /// Makes `name` in `folder` a symbolic link to `target`.
    ///
    /// The corresponding C function is `symlinkat`.
    static func symbolicLink(
        _ name: String, in folder: Descriptor, to target: String, display: String
    ) throws(PackError) {
        if case .failure(let errno) = valueOrErrno({ symlinkat(target, folder.file.rawValue, name) }) {
            throw PackError.system("cannot create the link \(display)", call: "symlinkat", errno: errno)
        }
    }

    /// What the symbolic link `name` in `folder` points to (up to 4096 bytes).
    ///
    /// The corresponding C function is `readlinkat`.
    static func linkTarget(_ name: String, in folder: Descriptor, display: String) throws(PackError) -> String {
        switch readLink(name, relativeTo: folder.file.rawValue) {
        case .success(let target): return target
        case .failure(let errno):
            throw PackError.system("cannot read the link \(display)", call: "readlinkat", errno: errno)
        }
    }

    // MARK: - Inside

    /// What the symbolic link at `path` (relative to the folder `folder`, or `AT_FDCWD`) points
    /// to, up to 4096 bytes, `EINTR` retried.
    ///
    /// The corresponding C function is `readlinkat`.
    static func readLink(_ path: String, relativeTo folder: CInt) -> Result<String, Errno> {
        var buffer = [CChar](repeating: 0, count: 4097)
        return valueOrErrno { readlinkat(folder, path, &buffer, 4096) }.map { count in
            String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// Runs `call` again while it fails with `EINTR`: its value, or the `Errno` it failed with
    /// (swift-system's `valueOrErrno`, for the calls it lacks).
    static func valueOrErrno<Value: FixedWidthInteger>(_ call: () -> Value) -> Result<Value, Errno> {
        while true {
            let value = call()
            if value != -1 { return .success(value) }
            let errno = Errno(rawValue: Glibc.errno)
            if errno != .interrupted { return .failure(errno) }
        }
    }

    /// `body`'s value (a swift-system call, which retries `EINTR` itself), or a ``PackError``
    /// saying `what` with the `Errno` it threw, naming `call`.
    static func calling<Value>(
        _ call: String, _ what: @autoclosure () -> String, _ body: () throws -> Value
    ) throws(PackError) -> Value {
        do { return try body() } catch {
            // swift-system's calls throw only Errno; anything else is an I/O error of some kind.
            throw PackError.system(what(), call: call, errno: error as? Errno ?? .ioError)
        }
    }
}
