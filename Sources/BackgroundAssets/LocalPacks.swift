import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// The app's local asset packs as they are on the disk: what ``AssetPackManager`` reads files
/// through, with basd running or not.
///
/// `links` is a folder of links, one per local pack, `ID -> ../.background-assets/packs/ID/N`
/// (basd's `STATE/packs/APP/AssetPacks`, reached through the container's `AppAssetPacks/APP`
/// or directly; docs/packs.md, "Inside: assembling and switching a version"). Another process of
/// the same user can write there, so nothing in it is taken on trust: a pack's link counts only in
/// exactly that form (a version number within bounds); from the link folder on, every folder and
/// file is opened one component at a time with `O_NOFOLLOW` (a link planted anywhere below is
/// refused, never followed out of the tree); only a regular file is read or handed out, and never
/// more of it than its size said when it was opened; listings and paths are bounded as basd
/// bounds them (`PackLimits`).
struct LocalPacks {
    /// The folder of the packs' links (its path, for the URLs handed out).
    let links: String

    /// At most this many entries of the link folder are looked at (basd keeps at most
    /// `PackLimits.maximumPacks`, 1 000, packs per app, and a link being switched for each).
    static let maximumEntries = 4096
    /// `PackLimits.maximumVersion`.
    static let maximumVersion = (1 << 53) - 1
    /// `PackLimits.maximumPathBytes` and `maximumDepth`.
    static let maximumPathBytes = 1024
    static let maximumDepth = 64

    /// What was found: an open descriptor (a regular file, or a folder when folders count), and
    /// its path through the links.
    struct Item {
        var descriptor: FileDescriptor
        var isFolder: Bool
        var path: String
    }

    /// Finds `path` (relative, of plain names) in `pack`'s current version, or in the first local
    /// pack by ID that has it. With `files`, only a regular file counts; else a folder does too.
    /// The caller closes the descriptor.
    ///
    /// - Throws: ``ManagedBackgroundAssetsError/fileNotFound(at:)`` when no pack has it (or `path`
    ///   is not a relative path of plain names, or leads through a link);
    ///   ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` when `pack` is not local.
    func locate(_ path: FilePath, pack: String?, files: Bool, among: [String]? = nil) throws -> Item {
        let components = path.components.map(\.string)
        guard !path.isAbsolute, !components.isEmpty, components.count <= Self.maximumDepth,
            path.string.utf8.count <= Self.maximumPathBytes, path.components.allSatisfy({ $0.kind == .regular })
        else { throw ManagedBackgroundAssetsError.fileNotFound(at: path) }
        guard let folder = Self.openFolder(links) else {
            if let pack { throw ManagedBackgroundAssetsError.assetPackNotFound(withID: pack) }
            throw ManagedBackgroundAssetsError.fileNotFound(at: path)
        }
        defer { close(folder) }
        let packs: [String]
        if let among {
            // The packs of one language (`asLocalizedFor:`), in the order of their IDs.
            packs = among.filter(Self.isPlainName).sorted()
        } else if let pack {
            guard Self.isPlainName(pack) else { throw ManagedBackgroundAssetsError.assetPackNotFound(withID: pack) }
            packs = [pack]
        } else {
            packs = Self.packIDs(in: folder)
        }
        for id in packs {
            guard let version = Self.openVersion(id, links: folder) else {
                if pack != nil { throw ManagedBackgroundAssetsError.assetPackNotFound(withID: id) }
                continue
            }
            if let (descriptor, isFolder) = Self.openItem(components, in: version, files: files) {
                return Item(
                    descriptor: descriptor, isFolder: isFolder,
                    path: links + "/" + id + "/" + components.joined(separator: "/"))
            }
        }
        throw ManagedBackgroundAssetsError.fileNotFound(at: path)
    }

    /// Whether `pack` is local: its link has the form basd gives it and leads to a version's folder.
    func isLocal(_ pack: String) -> Bool {
        guard Self.isPlainName(pack), let folder = Self.openFolder(links) else { return false }
        defer { close(folder) }
        guard let version = Self.openVersion(pack, links: folder) else { return false }
        close(version)
        return true
    }

    /// The current version of `pack` as its link says, or nil when it is not local (or its link is
    /// not of basd's form).
    func currentVersion(of pack: String) -> Int? {
        guard Self.isPlainName(pack), let folder = Self.openFolder(links) else { return nil }
        defer { close(folder) }
        return Self.linkedVersion(pack, links: folder)
    }

    /// Reads all of the regular file `descriptor` from its start: at most the size it had when it
    /// was opened (a file that grows meanwhile is not read further).
    static func readAll(_ descriptor: FileDescriptor, path: FilePath) throws -> Data {
        var info = stat()
        guard fstat(descriptor.rawValue, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size >= 0,
            info.st_size <= Int64(Int.max)
        else { throw ManagedBackgroundAssetsError.fileNotFound(at: path) }
        let size = Int(info.st_size)
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: min(max(size, 1), 1 << 20))
        while data.count < size {
            let want = min(buffer.count, size - data.count)
            let count = try buffer.withUnsafeMutableBytes { bytes in
                try descriptor.read(
                    fromAbsoluteOffset: Int64(data.count),
                    into: UnsafeMutableRawBufferPointer(rebasing: bytes[..<want]),
                    retryOnInterrupt: true)
            }
            if count == 0 { break }
            data.append(contentsOf: buffer[..<count])
        }
        return data
    }

    // MARK: The walk

    /// A pack ID that can name a link in the folder: one plain name, not hidden.
    static func isPlainName(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 255 && !id.hasPrefix(".") && !id.contains("/") && !id.contains("\0")
    }

    /// The version `id`'s link names, when it is exactly `../.background-assets/packs/ID/N`.
    static func version(ofLinkTarget target: String, id: String) -> Int? {
        let prefix = "../.background-assets/packs/" + id + "/"
        guard target.hasPrefix(prefix) else { return nil }
        let number = target.dropFirst(prefix.count)
        guard (1...16).contains(number.utf8.count), number.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let version = Int(number), version <= maximumVersion
        else { return nil }
        return version
    }

    /// Opens the folder at `path` (the entry point given: links on the way to it followed).
    static func openFolder(_ path: String) -> Int32? {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        return fd >= 0 ? fd : nil
    }

    /// The version `id`'s link in `links` names, read without following it.
    private static func linkedVersion(_ id: String, links: Int32) -> Int? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlinkat(links, id, &buffer, buffer.count)
        guard length > 0, length < buffer.count else { return nil }
        let target = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return version(ofLinkTarget: target, id: id)
    }

    /// Opens `id`'s current version folder: the link read, then `..`, `.background-assets`,
    /// `packs`, `ID` and `N` opened one at a time without following links. A link switched (and
    /// its old version removed) between the read and the open is read again, a few times.
    static func openVersion(_ id: String, links: Int32) -> Int32? {
        for _ in 0..<3 {
            guard let version = linkedVersion(id, links: links) else { return nil }
            var folder = openat(links, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            var failure = errno
            for name in [".background-assets", "packs", id, String(version)] where folder >= 0 {
                let next = openat(folder, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                failure = errno
                close(folder)
                folder = next
            }
            if folder >= 0 { return folder }
            guard failure == ENOENT else { return nil }
        }
        return nil
    }

    /// Opens `components` below the folder `start` (closed here), one at a time without following
    /// links: the last one when it is a regular file, or a folder and `!files`.
    private static func openItem(_ components: [String], in start: Int32, files: Bool) -> (FileDescriptor, Bool)? {
        var folder = start
        for name in components.dropLast() {
            let next = openat(folder, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            close(folder)
            guard next >= 0 else { return nil }
            folder = next
        }
        defer { close(folder) }
        guard let name = components.last else { return nil }
        // What it is, before opening it: a FIFO or a device is never opened.
        var info = stat()
        guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG || (type == S_IFDIR && !files) else { return nil }
        let directory = type == S_IFDIR ? O_DIRECTORY : 0
        let fd = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | directory)
        guard fd >= 0 else { return nil }
        // Checked again on what was opened (it could have changed since).
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == type else {
            close(fd)
            return nil
        }
        // O_NONBLOCK only guarded the open.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return (FileDescriptor(rawValue: fd), type == S_IFDIR)
    }

    /// The IDs of the links in the folder `links`, sorted: plain names, at most
    /// ``maximumEntries`` entries read.
    private static func packIDs(in links: Int32) -> [String] {
        let copy = dup(links)
        guard copy >= 0 else { return [] }
        guard let stream = fdopendir(copy) else {
            close(copy)
            return []
        }
        defer { closedir(stream) }
        var ids: [String] = []
        var seen = 0
        while seen < maximumEntries, let entry = readdir(stream) {
            seen += 1
            var name = entry.pointee.d_name
            let id = withUnsafeBytes(of: &name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            // Whether it is a link of basd's form is for openVersion to say.
            if isPlainName(id) { ids.append(id) }
        }
        return ids.sorted()
    }
}
