import BAPackManifest
import Foundation

// What an interrupted or superseded install leaves under `ROOT/.background-assets/packs/ID`
// (issue 33): staging folders no job will finish, and damaged copies a repair swapped out.
extension PackInstallation {
    /// The leftovers of pack `id` under `root`.
    package struct Leftovers: Sendable, Equatable {
        /// Versions with a staging folder (`N.staging`), ascending.
        package var staging: [Int] = []
        /// Versions with a damaged copy a repair swapped out (`N.replaced`), ascending.
        package var replaced: [Int] = []
    }

    /// The pack IDs with a folder under `ROOT/.background-assets/packs` (names that are not a
    /// usable pack ID are skipped: basd never made them).
    package static func packIDs(root: String) throws(PackError) -> [String] {
        var folder = try PackFileSystem.openRoot(root)
        var display = root
        for name in [".background-assets", "packs"] {
            display += "/" + name
            guard try PackFileSystem.status(name, in: folder, display: display) != nil else { return [] }
            folder = try PackFileSystem.openFolder(name, in: folder, display: display)
        }
        return try PackFileSystem.names(in: folder, display: display).filter(PackManifest.isValidID).sorted()
    }

    /// The staging folders and replaced copies of pack `id` on disk.
    package static func leftovers(root: String, id: String) throws(PackError) -> Leftovers {
        guard PackManifest.isValidID(id) else { throw PackError("\"\(id)\" is not a usable pack id") }
        var found = Leftovers()
        guard let packs = try openPacksIfPresent(root: root, id: id) else { return found }
        let display = root + "/" + packsFolder(id: id)
        for name in try PackFileSystem.names(in: packs, display: display) {
            for (suffix, isStaging) in [(".staging", true), (".replaced", false)] where name.hasSuffix(suffix) {
                let number = name.dropLast(suffix.count)
                guard let version = Int(number), version >= 1, "\(version)" == number else { continue }
                if isStaging { found.staging.append(version) } else { found.replaced.append(version) }
            }
        }
        found.staging.sort()
        found.replaced.sort()
        return found
    }

    /// Removes everything of pack `id` that is not current: every staging folder, and every
    /// complete version that `ROOT/AssetPacks/ID` does not lead to is moved aside to `N.replaced`
    /// (so that its name is free at once); returns the versions moved aside, for the caller to
    /// remove with ``removeReplaced(root:id:version:)`` once nothing holds them.
    ///
    /// - Throws: ``PackError`` on an I/O error, or if something other than basd's link is at
    ///   `AssetPacks/ID` (nothing is removed then).
    package static func retireAllButCurrent(root: String, id: String) throws(PackError) -> [Int] {
        let current = try current(root: root, id: id)
        for version in try leftovers(root: root, id: id).staging {
            try removeStaging(root: root, id: id, version: version)
        }
        var retired: [Int] = []
        for version in try versions(root: root, id: id) where version != current {
            try retire(root: root, id: id, version: version)
            retired.append(version)
        }
        return retired
    }
}
