import BACore
import Foundation

extension DepotScript {
    /// Where a converted manifest goes and what it says beside the script's mappings.
    package struct Conversion: Sendable, Hashable {
        package var assetPackID: String
        package var downloadPolicy: PackManifest.DownloadPolicy
        /// BCP-47 language tag written as `language` (nil: the pack is not localized).
        package var language: String?
        /// The folder the script is in (a relative ContentRoot is relative to it; none: it).
        package var scriptFolder: String
        /// Replaces the script's ContentRoot (a Windows path, a build machine's).
        package var contentRoot: String?
        /// The folder the manifest is written to (its `contentRoot` is relative to it).
        package var outputFolder: String

        package init(
            assetPackID: String, downloadPolicy: PackManifest.DownloadPolicy, language: String?, scriptFolder: String,
            contentRoot: String?, outputFolder: String
        ) {
            self.assetPackID = assetPackID
            self.downloadPolicy = downloadPolicy
            self.language = language
            self.scriptFolder = scriptFolder
            self.contentRoot = contentRoot
            self.outputFolder = outputFolder
        }
    }

    /// The manifest `ba pack build` reads for this depot (JSON), and the manifest it parses to.
    package func manifest(_ conversion: Conversion) throws(ConvertError) -> (json: [UInt8], manifest: PackManifest) {
        guard PackManifest.isValidID(conversion.assetPackID) else {
            throw ConvertError(
                line: 0,
                message:
                    "--asset-pack-id \"\(conversion.assetPackID)\" is not usable: use 1 to 128 letters, digits, '.', '-' or '_', not starting with '.'"
            )
        }
        if let language = conversion.language, !Self.isLanguageTag(language) {
            throw ConvertError(line: 0, message: "-l \"\(language)\" is not a BCP-47 language tag (en-US, fr, zh-Hant)")
        }
        let root = try resolvedRoot(conversion)
        var mappings: [JSONValue] = []
        for mapping in self.mappings {
            let local = try Self.inside(mapping.localPath, root: root, what: "LocalPath")
            guard !local.isEmpty else {
                throw ConvertError(
                    line: mapping.localPath.line,
                    message: "LocalPath names ContentRoot itself: use \"*\" with recursive \"1\"")
            }
            if Self.isAbsolute(mapping.depotPath.text) {
                throw ConvertError(
                    line: mapping.depotPath.line,
                    message:
                        "DepotPath \"\(mapping.depotPath.text)\" is absolute: it is a folder inside the install (\".\" is its top)"
                )
            }
            if local.split(separator: "/").dropLast().contains(where: { PackManifest.hasWildcard(String($0)) }) {
                throw ConvertError(
                    line: mapping.localPath.line,
                    message:
                        "LocalPath \"\(mapping.localPath.text)\" has a wildcard before its last part; only the file name may have one"
                )
            }
            let depot = try Self.inside(mapping.depotPath, root: "", what: "DepotPath", within: "the install folder")
            mappings.append(
                .object([
                    "localPath": .string(local), "depotPath": .string(depot.isEmpty ? "." : depot),
                    "recursive": .bool(mapping.recursive),
                ]))
        }
        var exclusions: [JSONValue] = []
        for exclusion in self.exclusions {
            exclusions.append(.string(try Self.inside(exclusion, root: root, what: "FileExclusion")))
        }
        var object: [String: JSONValue] = [
            "assetPackID": .string(conversion.assetPackID),
            "downloadPolicy": try Self.json(conversion.downloadPolicy),
            "fileMappings": .array(mappings),
            "contentRoot": .string(Self.relative(root, from: Self.absolute(conversion.outputFolder))),
        ]
        if !exclusions.isEmpty { object["fileExclusions"] = .array(exclusions) }
        if let language = conversion.language { object["language"] = .string(language) }
        if let depotID { object["userInfo"] = .object(["steamDepotID": .string(depotID)]) }
        let bytes: [UInt8]
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            bytes = Array(try encoder.encode(JSONValue.object(object))) + [UInt8(ascii: "\n")]
        } catch {
            throw ConvertError(line: 0, message: "cannot encode the manifest: \(error)")
        }
        do {
            return (bytes, try PackManifest.parse(bytes))
        } catch {
            throw ConvertError(line: 0, message: "the converted manifest is refused by `ba pack build`: \(error)")
        }
    }

    /// The content root, absolute and normalized: `--content-root`, or ContentRoot against the
    /// script's folder, or the script's folder.
    package func resolvedRoot(_ conversion: Conversion) throws(ConvertError) -> String {
        if let given = conversion.contentRoot { return Self.absolute(given) }
        guard let contentRoot else { return Self.absolute(conversion.scriptFolder) }
        if contentRoot.text.hasPrefix("/") { return Self.absolute(contentRoot.text) }
        if Self.isAbsolute(contentRoot.text) {
            throw ConvertError(
                line: contentRoot.line,
                message:
                    "ContentRoot \"\(contentRoot.text)\" is a Windows path: give the folder here with --content-root")
        }
        return Self.absolute(conversion.scriptFolder + "/" + contentRoot.text)
    }

    private static func json(_ policy: PackManifest.DownloadPolicy) throws(ConvertError) -> JSONValue {
        do {
            return try JSONDecoder().decode(JSONValue.self, from: try JSONEncoder().encode(policy))
        } catch {
            throw ConvertError(line: 0, message: "cannot encode the download policy: \(error)")
        }
    }

    /// `path` absolute and normalized (`.` and `..` resolved by name, links not followed).
    static func absolute(_ path: String) -> String {
        let full = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var parts: [Substring] = []
        for part in full.split(separator: "/") where part != "." {
            if part == ".." { _ = parts.popLast() } else { parts.append(part) }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// `path` relative to `base` (both absolute, normalized): `../x/y`, or `.` for the same folder.
    static func relative(_ path: String, from base: String) -> String {
        let target = path.split(separator: "/")
        let origin = base.split(separator: "/")
        var common = 0
        while common < target.count, common < origin.count, target[common] == origin[common] { common += 1 }
        let parts = Array(repeating: "..", count: origin.count - common) + target[common...].map(String.init)
        return parts.isEmpty ? "." : parts.joined(separator: "/")
    }

    /// A BCP-47 tag's shape: 1–8 letters, then `-` and 1–8 letters or digits, up to 35 bytes.
    package static func isLanguageTag(_ tag: String) -> Bool {
        let letter: (Unicode.Scalar) -> Bool = { ("a"..."z").contains($0) || ("A"..."Z").contains($0) }
        let parts = tag.split(separator: "-", omittingEmptySubsequences: false)
        guard tag.utf8.count <= 35, let first = parts.first, (1...8).contains(first.utf8.count),
            first.unicodeScalars.allSatisfy(letter)
        else { return false }
        return parts.dropFirst().allSatisfy { part in
            (1...8).contains(part.utf8.count)
                && part.unicodeScalars.allSatisfy { letter($0) || ("0"..."9").contains($0) }
        }
    }
}
