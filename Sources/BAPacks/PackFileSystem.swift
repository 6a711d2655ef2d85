import Foundation

/// An open file descriptor, closed when the last reference goes.
final class Descriptor {
    let fd: Int32
    init(_ fd: Int32) { self.fd = fd }
    deinit { close(fd) }
}

/// The few syscalls the pack assembler needs, each retrying `EINTR` and throwing a ``PackError``
/// that names the call and the path. Every open below a trusted starting folder goes one
/// component at a time with `O_NOFOLLOW`: a symbolic link planted in a pack folder (by a process
/// of the same user, an app that may not write elsewhere) is refused, never followed.
enum PackFileSystem {
    /// Opens the folder at `path` itself (links in it followed: the caller gives it).
    static func openRoot(_ path: String) throws(PackError) -> Descriptor {
        let fd = retrying { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { throw PackError.system("cannot open the folder \(path)", call: "open") }
        return Descriptor(fd)
    }

    /// Opens folder `name` in `parent`, creating it (0755) if `create`, never through a link; if
    /// `writable`, a read-only folder is given its owner's write bit back.
    static func openFolder(
        _ name: String, in parent: Descriptor, create: Bool = false, writable: Bool = false, display: String
    ) throws(PackError) -> Descriptor {
        if create {
            let made = retrying { mkdirat(parent.fd, name, 0o755) }
            if made == 0 {
                fsync(parent.fd)
            } else if errno != EEXIST {
                throw PackError.system("cannot create the folder \(display)", call: "mkdirat")
            }
        }
        let fd = retrying { openat(parent.fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else {
            if errno == ELOOP || errno == ENOTDIR {
                throw PackError("\(display) is a symbolic link or not a folder; refused (remove it)")
            }
            throw PackError.system("cannot open the folder \(display)", call: "openat")
        }
        let folder = Descriptor(fd)
        if writable {
            var info = stat()
            guard fstat(fd, &info) == 0 else { throw PackError.system("cannot stat \(display)", call: "fstat") }
            if info.st_mode & S_IWUSR == 0, fchmod(fd, 0o755) != 0 {
                throw PackError.system("cannot make \(display) writable", call: "fchmod")
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

    /// Opens the regular file `name` in `folder` with `flags` (plus `O_NOFOLLOW`): a link, a
    /// folder or a device there is refused. Returns nil when it does not exist and `missingIsNil`.
    static func openFile(
        _ name: String, in folder: Descriptor, flags: Int32, display: String, missingIsNil: Bool = false
    ) throws(PackError) -> Descriptor? {
        // O_NONBLOCK: a FIFO planted there must not hang the open; it has no effect on a regular file.
        let fd = retrying { openat(folder.fd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o644) }
        guard fd >= 0 else {
            if errno == ENOENT && missingIsNil { return nil }
            if errno == ELOOP { throw PackError("\(display) is a symbolic link; refused (remove it)") }
            throw PackError.system("cannot open \(display)", call: "openat")
        }
        let file = Descriptor(fd)
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw PackError("\(display) is not a regular file; refused (remove it)")
        }
        return file
    }

    /// `lstat` of `name` in `folder` (`fstatat` with `AT_SYMLINK_NOFOLLOW`); nil if absent.
    static func status(_ name: String, in folder: Descriptor, display: String) throws(PackError) -> stat? {
        var info = stat()
        guard fstatat(folder.fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            if errno == ENOENT { return nil }
            throw PackError.system("cannot stat \(display)", call: "fstatat")
        }
        return info
    }

    /// The names in an open folder (not `.` and `..`).
    static func names(in folder: Descriptor, display: String) throws(PackError) -> [String] {
        let copy = dup(folder.fd)
        guard copy >= 0, let stream = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            throw PackError.system("cannot list \(display)", call: "fdopendir")
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
        if info.st_mode & S_IFMT == S_IFDIR {
            let inner = try openFolder(name, in: folder, writable: true, display: display)
            for child in try names(in: inner, display: display) {
                try removeTree(child, in: inner, display: display + "/" + child)
            }
            guard retrying({ unlinkat(folder.fd, name, AT_REMOVEDIR) }) == 0 || errno == ENOENT else {
                throw PackError.system("cannot remove the folder \(display)", call: "unlinkat")
            }
        } else {
            guard retrying({ unlinkat(folder.fd, name, 0) }) == 0 || errno == ENOENT else {
                throw PackError.system("cannot remove \(display)", call: "unlinkat")
            }
        }
    }

    /// Reads exactly `buffer.count` bytes at `offset`; false if the file ends first.
    static func readFully(
        _ file: Descriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, display: String
    ) throws(PackError) -> Bool {
        var done = 0
        while done < buffer.count {
            let count = pread(file.fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if count < 0 {
                if errno == EINTR { continue }
                throw PackError.system("cannot read \(display)", call: "pread")
            }
            if count == 0 { return false }
            done += count
        }
        return true
    }

    /// Writes all of `bytes` at `offset` (`pwrite`).
    static func writeFully(
        _ file: Descriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64, display: String
    ) throws(PackError) {
        var done = 0
        while done < bytes.count {
            let count = pwrite(file.fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if count < 0 {
                if errno == EINTR { continue }
                throw PackError.system("cannot write \(display)", call: "pwrite")
            }
            done += count
        }
    }

    /// Whether `[offset, offset + length)` of `file` is all hole (`lseek` `SEEK_DATA`): nothing was
    /// written there, so there is nothing to read. A file system without holes says no.
    static func isHole(_ file: Descriptor, offset: Int64, length: Int) -> Bool {
        let data = lseek(file.fd, off_t(offset), seekData)
        if data < 0 { return errno == ENXIO }
        return Int64(data) >= offset + Int64(length)
    }

    /// `fsync`, naming what failed.
    static func sync(_ file: Descriptor, display: String) throws(PackError) {
        guard retrying({ fsync(file.fd) }) == 0 else {
            throw PackError.system("cannot fsync \(display)", call: "fsync")
        }
    }

    /// Linux's `SEEK_DATA` (glibc defines it only with `_GNU_SOURCE`, which Swift's Glibc module lacks).
    private static let seekData: Int32 = 3

    /// Runs a call again while it fails with `EINTR`.
    static func retrying(_ call: () -> Int32) -> Int32 {
        while true {
            let result = call()
            if result >= 0 || errno != EINTR { return result }
        }
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` for a body with typed throws (the standard library's rethrows `any Error`).
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(PackError) -> R) throws(PackError) -> R {
        let result: Result<R, PackError> = withUnsafeBytes { bytes in
            do throws(PackError) { return .success(try body(bytes)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// `withUnsafeMutableBytes` for a body with typed throws.
    mutating func withMutableBytes<R>(
        _ body: (UnsafeMutableRawBufferPointer) throws(PackError) -> R
    ) throws(PackError) -> R {
        let result: Result<R, PackError> = withUnsafeMutableBytes { bytes in
            do throws(PackError) { return .success(try body(bytes)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
