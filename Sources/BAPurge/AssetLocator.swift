#if canImport(Glibc)
    import Glibc
#endif

/// Finds where tracked assets are now, by device and inode, in the app group containers.
///
/// An app moves a delivered file (a rename, so the inode stays) anywhere in its container; the
/// locator walks the given roots depth-first with `opendir`/`readdir` and `lstat`, never following
/// a symlink, and notes every regular file whose device and inode a tracked asset recorded. The
/// internal `.background-assets` folder is walked too: an undelivered file still sits there.
///
/// The walk is bounded: it stops after ``maxEntriesVisited`` directory entries and says so in
/// ``Result/truncated``; an asset not found in a truncated walk may still exist. Directories that
/// cannot be read (permissions, removed during the walk) are skipped.
///
/// ```swift
/// let found = AssetLocator().locate(assets, roots: ["/var/lib/basd/groups/group.com.example"])
/// for file in found.files(of: assets[0]) { print(file.path) }
/// ```
package struct AssetLocator: Sendable {
    /// A regular file the walk found with a tracked asset's device and inode.
    package struct LocatedFile: Sendable, Equatable {
        /// Its path (a root followed by the names walked).
        package var path: String
        /// What `lstat` said when the walk passed it.
        package var identity: FileIdentity

        /// Creates a located file.
        package init(path: String, identity: FileIdentity) {
            self.path = path
            self.identity = identity
        }
    }

    /// What a walk found.
    package struct Result: Sendable {
        /// Every path found for each wanted key (more than one for hard links), in walk order.
        package var files: [FileKey: [LocatedFile]]
        /// How many directory entries the walk `lstat`ed.
        package var entriesVisited: Int
        /// True when the walk stopped at ``AssetLocator/maxEntriesVisited`` before the end.
        package var truncated: Bool

        /// The files found with `asset`'s device and inode (maybe none).
        package func files(of asset: TrackedAsset) -> [LocatedFile] { files[asset.key] ?? [] }
    }

    /// The most directory entries (files, folders, anything) one walk looks at, over all roots.
    package var maxEntriesVisited: Int

    /// Creates a locator.
    ///
    /// - Parameter maxEntriesVisited: The bound on one walk (default 100 000).
    package init(maxEntriesVisited: Int = 100_000) {
        self.maxEntriesVisited = maxEntriesVisited
    }

    /// Walks `roots` and returns where each of `assets` is now.
    ///
    /// A root that does not exist is skipped. Roots that overlap are walked once per root, but a
    /// path is reported once.
    package func locate(_ assets: [TrackedAsset], roots: [String]) -> Result {
        let wanted = Set(assets.map(\.key))
        var result = Result(files: [:], entriesVisited: 0, truncated: false)
        var seenPaths = Set<String>()
        // Depth-first with an explicit stack: no recursion depth limit on deep trees.
        var pending = roots.reversed().map { $0.hasSuffix("/") && $0.count > 1 ? String($0.dropLast()) : $0 }
        while let directory = pending.popLast() {
            guard let stream = opendir(directory) else { continue }
            defer { closedir(stream) }
            var children: [String] = []
            while let entry = readdir(stream) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                if name == "." || name == ".." { continue }
                guard result.entriesVisited < maxEntriesVisited else {
                    result.truncated = true
                    return result
                }
                result.entriesVisited += 1
                let path = directory == "/" ? "/" + name : directory + "/" + name
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }  // removed since readdir: skip it
                switch info.st_mode & S_IFMT {
                case S_IFDIR:
                    children.append(path)
                case S_IFREG:
                    guard let identity = FileIdentity(info), wanted.contains(identity.key),
                        seenPaths.insert(path).inserted
                    else { continue }
                    result.files[identity.key, default: []].append(LocatedFile(path: path, identity: identity))
                default:
                    continue  // symlinks are not followed; sockets, fifos and devices are not assets
                }
            }
            pending.append(contentsOf: children.reversed())
        }
        return result
    }
}
