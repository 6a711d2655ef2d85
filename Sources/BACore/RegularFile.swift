#if canImport(Glibc)
    import Glibc
#endif

/// Reads of paths a client or a user names (an `Info.plist`, a manifest, an extension library)
/// that cannot hang their reader: only a regular file is read, opened with `O_NONBLOCK` (a FIFO
/// with no writer, a device, answer at once) and checked with `fstat` before a byte is read,
/// up to a size cap.
package enum RegularFile {
    /// Why a file was not read.
    package struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// What is wrong, naming the file and how to fix it.
        package var message: String
        /// The file is not there (`ENOENT`).
        package var isMissing: Bool
        /// The file is larger than the limit (or grew past it while it was read).
        package var isTooLarge = false
        /// The errno of the call that failed (`open`, `fstat`, `read`), nil for a refusal of the file's kind or size.
        package var errno: Int32? = nil

        package var description: String { message }
    }

    /// The bytes of the regular file at `path`, at most `limit` of them.
    ///
    /// - Throws: ``Refusal`` when the file is missing, not a regular file (a FIFO, a device, a
    ///   socket, a directory), larger than `limit` bytes, or cannot be read.
    package static func read(_ path: String, limit: Int) throws(Refusal) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else {
            let code = errno
            throw Refusal(
                message: "\(path): cannot be opened: \(describe(code))", isMissing: code == ENOENT, errno: code)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            throw Refusal(message: "\(path): cannot be read: \(describe(code))", isMissing: false, errno: code)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw Refusal(
                message: "\(path) is \(kind(info.st_mode)), not a regular file; replace it with the file itself",
                isMissing: false)
        }
        guard info.st_size <= limit else {
            throw Refusal(
                message: "\(path) is larger than \(limit) bytes (\(info.st_size))", isMissing: false, isTooLarge: true)
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size) + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            if got < 0 {
                if errno == EINTR { continue }
                let code = errno
                throw Refusal(message: "\(path): cannot be read: \(describe(code))", isMissing: false, errno: code)
            }
            if got == 0 { break }
            count += got
        }
        guard count <= limit else {
            throw Refusal(
                message: "\(path) grew past \(limit) bytes while it was read", isMissing: false, isTooLarge: true)
        }
        return Array(bytes[0..<count])
    }

    /// The size of the regular file at `path` itself: a symbolic link there is not followed (nil,
    /// as for anything else that is not a regular file).
    package static func sizeWithoutFollowing(_ path: String) -> Int64? {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// What kind of file `mode` is, in words.
    package static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symbolic link"
        default: "not a regular file"
        }
    }

    private static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }
}
