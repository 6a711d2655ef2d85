import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How ``AssetPackManager/localSize(ofAssetPackWithID:calculationMethod:)`` counts a file's size
/// (Apple's `SizeCalculationMethod`, raw values of `BASizeCalculationMethod`).
public enum SizeCalculationMethod: Int, Sendable, Hashable, CustomStringConvertible {
    /// The bytes in each file (`st_size`). A file that two paths of the pack share (a hard link)
    /// counts at each path, as it reads.
    case logical = 0
    /// The bytes the file system allocated for the files (`st_blocks` × 512): a sparse file counts
    /// less than its length, a hard-linked file once.
    case allocated = 1

    public var description: String {
        switch self {
        case .logical: "logical"
        case .allocated: "allocated"
        }
    }
}

extension LocalPacks {
    /// Why a size could not be told.
    enum SizeFailure: Error, Equatable {
        /// The pack is not local (no link of basd's form, or its version folder is gone).
        case notLocal
        /// The walk went past a bound (more entries or deeper than a pack may have): the folder is
        /// not what basd wrote.
        case overBound
        /// A folder or file could not be read (`errno`).
        case unreadable(Int32)
    }

    /// Most entries a size walk looks at: `PackLimits.maximumFiles` files and as many folders.
    static let maximumSizeEntries = 200_000

    /// The size of `pack`'s current version: every regular file below its version folder, opened
    /// as ``locate(_:pack:files:)`` opens them (no link followed; links, FIFOs and devices are not
    /// counted). The sum saturates at `Int64.max`.
    func size(of pack: String, method: SizeCalculationMethod) throws(SizeFailure) -> Int64 {
        guard Self.isPlainName(pack), let folder = Self.openFolder(links) else { throw .notLocal }
        defer { close(folder) }
        guard let version = Self.openVersion(pack, links: folder) else { throw .notLocal }
        var walk = SizeWalk(method: method)
        try walk.add(folder: version, depth: 0)
        return walk.total
    }
}

/// One size walk: its running total, the entries seen, and the inodes counted (allocated).
private struct SizeWalk {
    let method: SizeCalculationMethod
    var total: Int64 = 0
    var entries = 0
    var inodes = Set<[UInt64]>()

    init(method: SizeCalculationMethod) { self.method = method }

    /// Adds what is below the open folder `fd` (closed here).
    mutating func add(folder fd: Int32, depth: Int) throws(LocalPacks.SizeFailure) {
        guard let stream = fdopendir(fd) else {
            let failure = errno
            close(fd)
            throw .unreadable(failure)
        }
        defer { closedir(stream) }
        let descriptor = dirfd(stream)
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw .unreadable(errno) }
                return
            }
            var raw = entry.pointee.d_name
            let name = withUnsafeBytes(of: &raw) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name == "." || name == ".." { continue }
            entries += 1
            guard entries <= LocalPacks.maximumSizeEntries else { throw .overBound }
            var info = stat()
            guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                // Removed while walked: the pack is being switched; what is left is counted.
                if errno == ENOENT { continue }
                throw .unreadable(errno)
            }
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                count(info)
            case S_IFDIR:
                guard depth + 1 < LocalPacks.maximumDepth else { throw .overBound }
                let child = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard child >= 0 else {
                    if errno == ENOENT { continue }
                    throw .unreadable(errno)
                }
                try add(folder: child, depth: depth + 1)
            default:
                continue
            }
        }
    }

    mutating func count(_ info: stat) {
        let bytes: Int64
        switch method {
        case .logical:
            bytes = max(0, Int64(info.st_size))
        case .allocated:
            guard inodes.insert([UInt64(info.st_dev), UInt64(info.st_ino)]).inserted else { return }
            let (product, overflow) = max(0, Int64(info.st_blocks)).multipliedReportingOverflow(by: 512)
            bytes = overflow ? .max : product
        }
        let (sum, overflow) = total.addingReportingOverflow(bytes)
        total = overflow ? .max : sum
    }
}
