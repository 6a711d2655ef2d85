import BAHashing
import BAPackManifest
import Foundation
import SystemPackage

// Where a chunk's bytes come from besides the network (the installed version, another pack's
// local version), and whether a version folder on disk is already the verified target.
extension PackStaging {
    /// `length` bytes of the installed version's file at `path`, or nil if they cannot be read
    /// (gone, a link, short, an I/O error): then the chunk is fetched instead.
    func readInstalled(path: String, offset: Int64, length: Int) -> [UInt8]? {
        guard let installed = plan.installedVersion, let packs else { return nil }
        let display = packsDisplay + "/\(installed)/" + path
        let file: Descriptor
        if let open = installedFiles[path] {
            file = open
        } else {
            guard let opened = Self.openVersionFile(path, version: installed, in: packs, display: display)?.file
            else { return nil }
            if installedFiles.count >= Self.openLimit { installedFiles = [:] }
            installedFiles[path] = opened
            file = opened
        }
        return Self.read(file, at: offset, length: length, display: display)
    }

    /// File `path` of version `version` in a pack's folder of versions (`packs`), and the folder
    /// holding it, each component opened without following links; nil if it cannot be opened.
    static func openVersionFile(
        _ path: String, version: Int, in packs: Descriptor, display: String
    ) -> (parent: Descriptor, file: Descriptor)? {
        let components = path.split(separator: "/")
        guard let name = components.last,
            let parent = try? PackFileSystem.openFolders(
                ["\(version)"] + components.dropLast(), in: packs, display: display),
            let file = try? PackFileSystem.openFile(String(name), in: parent, .readOnly, display: display)
        else { return nil }
        return (parent, file)
    }

    /// Exactly `length` bytes of `file` at `offset`, or nil (short, or an I/O error).
    static func read(_ file: Descriptor, at offset: Int64, length: Int, display: String) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: length)
        let read = bytes.withUnsafeMutableBytes { bytes in
            (try? PackFileSystem.readFully(file, into: bytes, at: offset, display: display)) ?? false
        }
        return read ? bytes : nil
    }

    /// `length` bytes of another pack's local file (a chunk the packs share), or nil if they
    /// cannot be read; every component is opened without following links, like the rest.
    func readOtherPack(_ pack: String, version: Int, path: String, offset: Int64, length: Int) -> [UInt8]? {
        let display = root + "/" + PackInstallation.packsFolder(id: pack) + "/\(version)/" + path
        guard let packs = try? PackInstallation.openPacks(root: root, id: pack, create: false),
            let file = Self.openVersionFile(path, version: version, in: packs, display: display)?.file
        else { return nil }
        return Self.read(file, at: offset, length: length, display: display)
    }

    /// Whether version `N`'s folder holds every file of the index with its size and SHA-256.
    func verifiedVersion(in packs: Descriptor) -> Bool {
        let display = packsDisplay + "/" + versionName
        guard let version = try? PackFileSystem.openFolder(versionName, in: packs, display: display) else {
            return false
        }
        for (index, file) in plan.target.files.enumerated() {
            guard let parent = try? PackFileSystem.openFolders(paths[index].dropLast(), in: version, display: display),
                let opened = try? PackFileSystem.openFile(
                    String(paths[index].last!), in: parent, .readOnly, display: display),
                (try? Self.matches(opened, file, display: display)) == true
            else { return false }
        }
        return true
    }

    /// Whether the open file has the size and SHA-256 the index gives.
    static func matches(_ descriptor: Descriptor, _ file: PackIndex.File, display: String) throws(PackError) -> Bool {
        guard (try? PackFileSystem.status(of: descriptor, display: display))?.size == file.size else { return false }
        let hasher = SHA256Hasher()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        while offset < file.size {
            let count = Int(min(Int64(buffer.count), file.size - offset))
            let read = try buffer.withMutableBytes { whole throws(PackError) -> Bool in
                let bytes = UnsafeMutableRawBufferPointer(rebasing: whole[0..<count])
                guard try PackFileSystem.readFully(descriptor, into: bytes, at: offset, display: display) else {
                    return false
                }
                hasher.update(UnsafeRawBufferPointer(bytes))
                return true
            }
            guard read else { return false }
            offset += Int64(count)
        }
        return hasher.finalizeHex() == file.sha256
    }
}
