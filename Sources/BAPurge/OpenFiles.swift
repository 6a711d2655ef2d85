#if canImport(Glibc)
    import Glibc
#endif

/// Which processes have which files open or mapped, from `/proc`, for the keys asked about.
///
/// For every process it `stat`s each `/proc/PID/fd/N` (the kernel follows that link to the open
/// file itself, even one deleted or in another mount namespace) and reads `/proc/PID/maps` (a file
/// still mapped after its descriptor was closed is in use too), and matches device and inode.
///
/// What it cannot see, it does not report:
/// - A process whose `/proc/PID/fd` cannot be read is skipped (``Snapshot/unreadableProcesses``
///   counts them): without root or `CAP_SYS_PTRACE`, basd sees only its own user's processes.
///   Apps run as other users keep files they hold open from purging only when basd can read them.
/// - A process that starts or opens the file after the scan; a purge re-scans just before each
///   delete, which narrows the window but cannot close it (deleting a file that is open only
///   unlinks its name: the process keeps its data until it closes it).
/// - On overlayfs, `/proc/PID/maps` reports the underlying file's device and inode, not the
///   overlay's, so a mapping there may be missed; descriptors are matched correctly.
package struct OpenFiles: Sendable {
    /// What one scan found.
    package struct Snapshot: Sendable {
        /// The pids that have each key open or mapped, ascending; only keys asked about.
        package var pids: [FileKey: [Int32]]
        /// Processes whose descriptors could not be read (permissions, or exited during the scan).
        package var unreadableProcesses: Int

        /// The pids that have `key` open or mapped, ascending (empty when none).
        package func pids(of key: FileKey) -> [Int32] { pids[key] ?? [] }
    }

    /// The proc filesystem's mount point (another directory only for tests).
    package var procRoot: String

    /// Creates a scanner of `procRoot`.
    package init(procRoot: String = "/proc") {
        self.procRoot = procRoot
    }

    /// Scans every process for the files with `keys`.
    package func scan(for keys: Set<FileKey>) -> Snapshot {
        var snapshot = Snapshot(pids: [:], unreadableProcesses: 0)
        guard !keys.isEmpty, let proc = opendir(procRoot) else { return snapshot }
        defer { closedir(proc) }
        var found: [FileKey: Set<Int32>] = [:]
        while let entry = readdir(proc) {
            let name = Self.name(of: entry)
            guard let pid = Int32(name), pid > 0 else { continue }
            let base = procRoot + "/" + name
            guard let fds = opendir(base + "/fd") else {
                snapshot.unreadableProcesses += 1
                continue
            }
            while let fd = readdir(fds) {
                let fdName = Self.name(of: fd)
                guard fdName.first != "." else { continue }
                var info = stat()
                // stat (not lstat) follows the magic link to the open file itself.
                guard stat(base + "/fd/" + fdName, &info) == 0 else { continue }
                let key = FileKey(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
                if keys.contains(key) { found[key, default: []].insert(pid) }
            }
            closedir(fds)
            for key in Self.mappedKeys(maps: base + "/maps") where keys.contains(key) {
                found[key, default: []].insert(pid)
            }
        }
        snapshot.pids = found.mapValues { $0.sorted() }
        return snapshot
    }

    private static func name(of entry: UnsafeMutablePointer<dirent>) -> String {
        withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }

    /// The device and inode of every file mapping in a `/proc/PID/maps` (empty if unreadable).
    static func mappedKeys(maps path: String) -> Set<FileKey> {
        guard let text = readSmallFile(path) else { return [] }
        return parseMaps(text)
    }

    /// Parses `/proc/PID/maps` lines: `address perms offset MAJOR:MINOR inode [path]` (hex device
    /// numbers); inode 0 is an anonymous mapping.
    static func parseMaps(_ text: String) -> Set<FileKey> {
        var keys = Set<FileKey>()
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count >= 5, let inode = UInt64(fields[4]), inode != 0 else { continue }
            let device = fields[3].split(separator: ":")
            guard device.count == 2, let major = UInt64(device[0], radix: 16), let minor = UInt64(device[1], radix: 16)
            else { continue }
            keys.insert(FileKey(device: makeDevice(major: major, minor: minor), inode: inode))
        }
        return keys
    }

    /// A `dev_t` from its major and minor numbers, as glibc's `makedev()` macro builds it
    /// (`bits/sysmacros.h`; a macro, so Swift cannot call it).
    static func makeDevice(major: UInt64, minor: UInt64) -> UInt64 {
        ((major & 0xffff_f000) << 32) | ((major & 0x0000_0fff) << 8) | ((minor & 0xffff_ff00) << 12)
            | (minor & 0x0000_00ff)
    }

    /// Reads a proc file to its end (its size reads as 0, so `stat` cannot tell how much there is).
    private static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
