import BAPackManifest
import Foundation
import SystemPackage

/// Where a pack's versions live in an app's container `ROOT`, and the atomic switch between them:
///
/// ```
/// ROOT/AssetPacks/ID          -> ../.background-assets/packs/ID/N   (the current version)
/// ROOT/.background-assets/packs/ID/N/…          (version N, complete, read-only)
/// ROOT/.background-assets/packs/ID/N.staging/…  (being assembled by PackStaging)
/// ```
///
/// The link's target is relative, so the container can move. Switching renames a new link over
/// the old one, so a reader that opens `AssetPacks/ID/…` sees the whole old version or the whole
/// new one, never a mix. No link below `ROOT` is followed (but the one the app reads through).
package enum PackInstallation {
    /// The folder of pack links in a container.
    package static let linksFolder = "AssetPacks"
    /// The folder of pack versions in a container, relative to it.
    package static func packsFolder(id: String) -> String { ".background-assets/packs/\(id)" }
    /// What `AssetPacks/ID` points to for version `version`.
    package static func linkTarget(id: String, version: Int) -> String { "../\(packsFolder(id: id))/\(version)" }

    /// The current version of pack `id`: the version `ROOT/AssetPacks/ID` points to, or nil if
    /// there is no link.
    ///
    /// - Throws: ``PackError`` if something other than basd's link is there (a file, a folder, a
    ///   link elsewhere): it is not a version basd installed, and it should not be replaced
    ///   silently (``removeLink(root:id:)`` removes a link; anything else is the user's to remove).
    package static func current(root: String, id: String) throws(PackError) -> Int? {
        try checkID(id)
        let rootFolder = try PackFileSystem.openRoot(root)
        let display = root + "/" + linksFolder
        guard try PackFileSystem.status(linksFolder, in: rootFolder, display: display) != nil else { return nil }
        let links = try PackFileSystem.openFolder(linksFolder, in: rootFolder, display: display)
        guard let info = try PackFileSystem.status(id, in: links, display: display + "/" + id) else { return nil }
        guard info.type == .symbolicLink else {
            throw PackError("\(display)/\(id) is not a link to a pack version; remove it so basd can install the pack")
        }
        let target = try PackFileSystem.linkTarget(id, in: links, display: display + "/" + id)
        let prefix = "../\(packsFolder(id: id))/"
        guard target.hasPrefix(prefix), let version = Int(target.dropFirst(prefix.count)), version >= 1 else {
            throw PackError("\(display)/\(id) points to \(target), not to a version of the pack; remove it")
        }
        return version
    }

    /// Makes version `version` (complete on disk) the current one: creates `AssetPacks/` if
    /// missing, a temporary link `AssetPacks/.ID.new-RANDOM` to it, renames that over
    /// `AssetPacks/ID` (atomic) and `fsync`s `AssetPacks/`.
    ///
    /// - Throws: ``PackError`` if the version is not on disk, or `AssetPacks/ID` is a folder.
    package static func switchCurrent(root: String, id: String, version: Int) throws(PackError) {
        try checkID(id)
        let versionDisplay = root + "/" + packsFolder(id: id) + "/\(version)"
        guard let packs = try openPacksIfPresent(root: root, id: id),
            let info = try PackFileSystem.status("\(version)", in: packs, display: versionDisplay),
            info.type == .directory
        else { throw PackError("version \(version) of pack \(id) is not complete on disk (\(versionDisplay))") }
        let rootFolder = try PackFileSystem.openRoot(root)
        let display = root + "/" + linksFolder
        let links = try PackFileSystem.openFolder(linksFolder, in: rootFolder, create: true, display: display)
        let temporary = ".\(id).new-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
        try PackFileSystem.symbolicLink(
            temporary, in: links, to: linkTarget(id: id, version: version), display: display + "/" + temporary)
        do {
            try PackFileSystem.rename(
                temporary, to: id, in: links,
                failure: "cannot switch \(display)/\(id) to version \(version) (is it a folder? remove it)")
        } catch {
            try? PackFileSystem.remove(temporary, in: links, display: display + "/" + temporary)
            throw error
        }
        try PackFileSystem.sync(links, display: display)
    }

    /// Removes the link `AssetPacks/ID` (absent is fine).
    ///
    /// - Throws: ``PackError`` if something other than a link is there.
    package static func removeLink(root: String, id: String) throws(PackError) {
        try checkID(id)
        let rootFolder = try PackFileSystem.openRoot(root)
        let display = root + "/" + linksFolder
        guard try PackFileSystem.status(linksFolder, in: rootFolder, display: display) != nil else { return }
        let links = try PackFileSystem.openFolder(linksFolder, in: rootFolder, display: display)
        guard let info = try PackFileSystem.status(id, in: links, display: display + "/" + id) else { return }
        guard info.type == .symbolicLink else {
            throw PackError("\(display)/\(id) is not a link; basd removes only its own links")
        }
        try PackFileSystem.remove(id, in: links, display: display + "/" + id)
        try PackFileSystem.sync(links, display: display)
    }

    /// The complete versions of pack `id` on disk (folders named by a number), ascending.
    package static func versions(root: String, id: String) throws(PackError) -> [Int] {
        try checkID(id)
        guard let packs = try openPacksIfPresent(root: root, id: id) else { return [] }
        let display = root + "/" + packsFolder(id: id)
        var found: [Int] = []
        for name in try PackFileSystem.names(in: packs, display: display) {
            guard let version = Int(name), version >= 1, "\(version)" == name,
                let info = try PackFileSystem.status(name, in: packs, display: display + "/" + name),
                info.type == .directory
            else { continue }
            found.append(version)
        }
        return found.sorted()
    }

    /// Removes version `version` of pack `id` (read-only: folders get their owner's write bit
    /// first). No link is followed; a link inside is removed as a link. Absent is fine.
    ///
    /// Check ``holders(of:)`` first: a process may still read the old version.
    ///
    /// - Throws: ``PackError`` if it is the current version (``removeLink(root:id:)`` first), or
    ///   on an I/O error.
    package static func remove(root: String, id: String, version: Int) throws(PackError) {
        try checkID(id)
        if try current(root: root, id: id) == version {
            throw PackError("version \(version) of pack \(id) is current; switch to another or remove the link first")
        }
        guard let packs = try openPacksIfPresent(root: root, id: id) else { return }
        try PackFileSystem.removeTree(
            "\(version)", in: packs, display: root + "/" + packsFolder(id: id) + "/\(version)")
        try PackFileSystem.sync(packs, display: root + "/" + packsFolder(id: id))
    }

    /// What in version `index.version` of pack `index.id` under `root` differs from `index`, one
    /// line per file (`ba packs verify`): a file that cannot be opened (every component opened
    /// without following links), has another size, or another SHA-256. Empty when all match.
    package static func problems(root: String, index: PackIndex) -> [String] {
        let display = root + "/" + packsFolder(id: index.id) + "/\(index.version)"
        guard let packs = try? openPacks(root: root, id: index.id, create: false) else {
            return ["version \(index.version) is not on disk (\(display))"]
        }
        var problems: [String] = []
        for file in index.files {
            guard
                let opened = PackStaging.openVersionFile(
                    file.path, version: index.version, in: packs, display: display + "/" + file.path)?.file
            else {
                problems.append("\(file.path): cannot be opened (missing, or a link)")
                continue
            }
            let size = (try? PackFileSystem.status(of: opened, display: display + "/" + file.path))?.size ?? 0
            if size != file.size {
                problems.append("\(file.path): \(size) bytes, not \(file.size)")
            } else if (try? PackStaging.matches(opened, file, display: display + "/" + file.path)) != true {
                problems.append("\(file.path): its SHA-256 does not match the index (changed on disk)")
            }
        }
        return problems
    }

    /// Removes `N.replaced`, the damaged copy a repair swapped out (``PackStaging/repair``).
    package static func removeReplaced(root: String, id: String, version: Int) throws(PackError) {
        try checkID(id)
        guard let packs = try openPacksIfPresent(root: root, id: id) else { return }
        try PackFileSystem.removeTree(
            "\(version).replaced", in: packs, display: root + "/" + packsFolder(id: id) + "/\(version).replaced")
    }

    /// Moves version `version` of pack `id` (no longer linked) aside to `N.replaced`, so that its
    /// name is free at once for a new copy of that version (a pack removed and asked for again
    /// before nothing held the old copy); ``removeReplaced(root:id:version:)`` removes it once
    /// nothing does. A copy left there before is removed first. Absent is fine.
    ///
    /// - Throws: ``PackError`` if it is the current version, or on an I/O error.
    package static func retire(root: String, id: String, version: Int) throws(PackError) {
        try checkID(id)
        if try current(root: root, id: id) == version {
            throw PackError("version \(version) of pack \(id) is current; remove the link first")
        }
        guard let packs = try openPacksIfPresent(root: root, id: id) else { return }
        let display = root + "/" + packsFolder(id: id)
        let aside = "\(version).replaced"
        try PackFileSystem.removeTree(aside, in: packs, display: display + "/" + aside)
        try PackFileSystem.rename(
            "\(version)", to: aside, in: packs, absentIsFine: true, failure: "cannot move \(display)/\(version) aside")
        try PackFileSystem.sync(packs, display: display)
    }

    /// Removes the staging folder of version `version` of pack `id` (absent is fine).
    package static func removeStaging(root: String, id: String, version: Int) throws(PackError) {
        try checkID(id)
        guard let packs = try openPacksIfPresent(root: root, id: id) else { return }
        try PackFileSystem.removeTree(
            "\(version).staging", in: packs, display: root + "/" + packsFolder(id: id) + "/\(version).staging")
    }

    /// The processes that hold something under `directory`: an open file (`/proc/PID/fd`), a
    /// mapping (`/proc/PID/maps`) or their working folder (`/proc/PID/cwd`). Processes that
    /// cannot be read (another user's, or gone meanwhile) are skipped. The calling process is
    /// included when it holds something there.
    ///
    /// `directory` is compared by its real path (the kernel reports resolved paths, so a file
    /// opened through `AssetPacks/ID` shows as under its version folder).
    package static func holders(of directory: String) -> [pid_t] {
        var resolved = directory
        if let real = realpath(directory, nil) {
            resolved = String(cString: real)
            free(real)
        }
        while resolved.count > 1 && resolved.hasSuffix("/") { resolved.removeLast() }
        let prefix = resolved + "/"
        func inside(_ path: String) -> Bool { path == resolved || path.hasPrefix(prefix) }
        var found: [pid_t] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(name) else { continue }
            let process = "/proc/" + name
            var holds = PackFileSystem.linkTarget(atPath: process + "/cwd").map(inside) ?? false
            if !holds {
                for fd in (try? FileManager.default.contentsOfDirectory(atPath: process + "/fd")) ?? [] {
                    if let target = PackFileSystem.linkTarget(atPath: process + "/fd/" + fd), inside(target) {
                        holds = true
                        break
                    }
                }
            }
            if !holds, let maps = FileManager.default.contents(atPath: process + "/maps") {
                // Each line: address perms offset dev inode [path]; the path may hold spaces.
                for line in String(decoding: maps, as: UTF8.self).split(separator: "\n") {
                    let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
                    if fields.count == 6, inside(fields[5].trimmingCharacters(in: .whitespaces)) {
                        holds = true
                        break
                    }
                }
            }
            if holds { found.append(pid) }
        }
        return found.sorted()
    }

    // MARK: - Inside

    /// `ROOT/.background-assets/packs/ID`, created if `create`, never through a link.
    static func openPacks(root: String, id: String, create: Bool) throws(PackError) -> Descriptor {
        try checkID(id)
        return try PackFileSystem.openFolders(
            [".background-assets", "packs", Substring(id)], in: try PackFileSystem.openRoot(root), create: create,
            display: root)
    }

    static func openPacksIfPresent(root: String, id: String) throws(PackError) -> Descriptor? {
        var folder = try PackFileSystem.openRoot(root)
        var display = root
        for name in [".background-assets", "packs", id] {
            display += "/" + name
            guard try PackFileSystem.status(name, in: folder, display: display) != nil else { return nil }
            folder = try PackFileSystem.openFolder(name, in: folder, display: display)
        }
        return folder
    }

    private static func checkID(_ id: String) throws(PackError) {
        guard PackManifest.isValidID(id) else { throw PackError("\"\(id)\" is not a usable pack id") }
    }
}
