import BAPackManifest
import Foundation

extension PackManifest {
    /// Files placed at another path than the one they are read from, as a Steam depot script's
    /// `FileMapping` says (`ba pack convert` writes them; docs/packs.md, "From a Steam depot").
    ///
    /// ```json
    /// "fileMappings": [ { "localPath": "bin/*.so", "depotPath": "lib", "recursive": true } ],
    /// "fileExclusions": [ "*.pdb" ]
    /// ```
    ///
    /// - `localPath` is relative to the root; only its last part may hold wildcards (`*`: any
    ///   run of characters, `?`: one). Without them it names one regular file; with them, the
    ///   regular files of its folder whose names match, and with `recursive` also those of every
    ///   folder below it, keeping their path below the folder.
    /// - `depotPath` is the folder, inside the pack, that the files go to (`.` or empty: the
    ///   pack's top).
    package struct FileMapping: Sendable, Hashable {
        package var localPath: String
        package var depotPath: String
        package var recursive: Bool

        package init(localPath: String, depotPath: String, recursive: Bool) {
            self.localPath = localPath
            self.depotPath = depotPath
            self.recursive = recursive
        }

        /// Its JSON, before it is checked.
        struct Raw: Decodable {
            var localPath: String?
            var depotPath: String?
            var recursive: Bool?
        }

        /// The folder part of ``localPath`` ("" for the root) and its last part.
        var split: (folder: String, name: String) {
            guard let slash = localPath.lastIndex(of: "/") else { return ("", localPath) }
            return (String(localPath[..<slash]), String(localPath[localPath.index(after: slash)...]))
        }
    }

    /// Whether `text` has a wildcard (`*` or `?`).
    static func hasWildcard(_ text: String) -> Bool { text.contains("*") || text.contains("?") }

    static func mappings(_ raws: [FileMapping.Raw], id: String) throws(PackError) -> [FileMapping] {
        var result: [FileMapping] = []
        for (index, raw) in raws.enumerated() {
            guard let local = raw.localPath else {
                throw PackError("fileMappings[\(index)] of \(id) has no \"localPath\"")
            }
            let localPath = try relativePath(local, id: id)
            let parts = localPath.split(separator: "/")
            if parts.dropLast().contains(where: { hasWildcard(String($0)) }) {
                throw PackError(
                    "fileMappings[\(index)] of \(id): localPath \"\(local)\" has a wildcard before its last part; only the file name may have one"
                )
            }
            let depot = raw.depotPath ?? "."
            let depotParts = depot.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
            guard !depot.hasPrefix("/"), !depotParts.contains("..") else {
                throw PackError(
                    "fileMappings[\(index)] of \(id): depotPath \"\(depot)\" must be a folder inside the pack (relative, without ..)"
                )
            }
            if depotParts.contains(where: { hasWildcard(String($0)) }) {
                throw PackError("fileMappings[\(index)] of \(id): depotPath \"\(depot)\" has a wildcard")
            }
            result.append(
                FileMapping(
                    localPath: localPath, depotPath: depotParts.joined(separator: "/"),
                    recursive: raw.recursive ?? false))
        }
        return result
    }

    static func exclusions(_ patterns: [String], id: String) throws(PackError) -> [String] {
        var result: [String] = []
        for pattern in patterns {
            result.append(try relativePath(pattern, id: id))
        }
        return result
    }

    /// Whether the file at `path` (relative to the root) is excluded: a pattern without `/` is
    /// matched against the file's name in any folder, one with `/` against the whole path (its
    /// `*` does not cross a `/`).
    package func isExcluded(_ path: String) -> Bool {
        fileExclusions.contains { pattern in
            if pattern.contains("/") { return Self.matches(path, pattern: pattern) }
            let name = path.split(separator: "/").last.map(String.init) ?? path
            return Self.matches(name, pattern: pattern)
        }
    }

    /// Whether `text` matches `pattern`: `*` any run of characters but `/`, `?` one character
    /// but `/`, anything else itself (case-sensitive, as Linux file names are). Linear in the
    /// lengths' product at worst (one backtracking point).
    package static func matches(_ text: String, pattern: String) -> Bool {
        let text = Array(text.unicodeScalars)
        let pattern = Array(pattern.unicodeScalars)
        var t = 0
        var p = 0
        var star: Int?
        var resume = 0
        while t < text.count {
            if p < pattern.count, pattern[p] == "*" {
                star = p
                resume = t
                p += 1
            } else if p < pattern.count, pattern[p] == "?" ? text[t] != "/" : pattern[p] == text[t] {
                t += 1
                p += 1
            } else if let star, text[resume] != "/" {
                p = star + 1
                resume += 1
                t = resume
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }

    /// The folder the manifest's files are read from: `root` when given, else ``contentRoot``
    /// against the manifest's folder `manifestFolder`, else that folder.
    package func rootFolder(manifestFolder: String, root: String?) -> String {
        if let root { return root.isEmpty ? "." : root }
        let folder = manifestFolder.isEmpty ? "." : manifestFolder
        guard let contentRoot else { return folder }
        return contentRoot.hasPrefix("/") ? contentRoot : folder + "/" + contentRoot
    }
}
