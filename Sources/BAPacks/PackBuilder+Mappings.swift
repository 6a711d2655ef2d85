import BAPackManifest
import Foundation

extension PackBuilder {
    /// The files a manifest packs: each one's path in the pack and the path it is read from
    /// (both relative to `root`), sorted by path in the pack. ``PackManifest/fileSelectors``
    /// keep their paths; ``PackManifest/fileMappings`` place files as a Steam depot script does;
    /// ``PackManifest/fileExclusions`` are matched against the path a file is read from.
    ///
    /// Two different files for one path in the pack is an error (Steam's last-wins would pack
    /// one silently). A symbolic link a selector or a mapping reaches is an error, never followed.
    package static func files(
        of manifest: PackManifest, root: String
    ) throws(PackError) -> [(
        path: String, source: String
    )] {
        var byPath: [String: String] = [:]
        func place(_ path: String, from source: String) throws(PackError) {
            guard !manifest.isExcluded(source) else { return }
            if let other = byPath[path], other != source {
                throw PackError(
                    "\(manifest.assetPackID): \(other) and \(source) both go to \(path) in the pack; map one elsewhere or exclude it"
                )
            }
            byPath[path] = source
        }
        for path in try select(manifest.fileSelectors, root: root) { try place(path, from: path) }
        for mapping in manifest.fileMappings {
            let (folder, name) = mapping.split
            let target = { (below: String) in
                mapping.depotPath.isEmpty ? below : mapping.depotPath + "/" + below
            }
            guard PackManifest.hasWildcard(name) else {
                try requireRegularFile(mapping.localPath, root: root)
                try place(target(name), from: mapping.localPath)
                continue
            }
            let start = folder.isEmpty ? "" : folder
            guard
                PackFileSystem.status(atPath: start.isEmpty ? root : root + "/" + start, followLinks: false)?.type
                    == .directory
            else {
                throw PackError(
                    "\(manifest.assetPackID): localPath \"\(mapping.localPath)\": \(start.isEmpty ? root : root + "/" + start) is not a folder"
                )
            }
            var found: [(below: String, source: String)] = []
            try matching(
                name, in: start, below: "", root: root, recursive: mapping.recursive, into: &found)
            for file in found { try place(target(file.below), from: file.source) }
        }
        return byPath.keys.sorted().map { ($0, byPath[$0] ?? $0) }
    }

    /// The regular files of `folder` (relative to `root`; "" is the root) whose names match
    /// `pattern`, and with `recursive` those of the folders below, each with its path below the
    /// starting folder (`below`) and from `root`.
    private static func matching(
        _ pattern: String, in folder: String, below: String, root: String, recursive: Bool,
        into found: inout [(below: String, source: String)]
    ) throws(PackError) {
        let names = try PackFileSystem.names(in: folder.isEmpty ? root : root + "/" + folder)
        for name in names.sorted() {
            let source = folder.isEmpty ? name : folder + "/" + name
            let relative = below.isEmpty ? name : below + "/" + name
            guard let info = PackFileSystem.status(atPath: root + "/" + source, followLinks: false) else {
                throw PackError("cannot read \(root)/\(source)")
            }
            let matches = PackManifest.matches(name, pattern: pattern)
            switch info.type {
            case .directory:
                if recursive {
                    try matching(pattern, in: source, below: relative, root: root, recursive: true, into: &found)
                }
            case .regular:
                if matches { found.append((relative, source)) }
            default:
                // A link the mapping reaches (by its name, or in a folder it walks) is never followed.
                if matches || recursive {
                    throw PackError(
                        "\(root)/\(source) is not a regular file or folder (a symbolic link?); pack files must be regular files"
                    )
                }
            }
        }
    }
}
