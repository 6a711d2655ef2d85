import Foundation

/// A Steam depot build script (`depot_build_ID.vdf`, Steamworks' "DepotBuildConfig"), read for
/// `ba pack convert`: its content root, file mappings and exclusions, each with its line.
///
/// Understood: `DepotID`, `ContentRoot`, `FileMapping` blocks (`LocalPath`, `DepotPath`,
/// `recursive`), `FileExclusion`. `InstallScript` and `FileProperties` (Windows install scripts,
/// Steam's user-config attributes) mean nothing to a pack: they are listed in ``ignored``. Any
/// other key is an error naming its line; keys are matched without regard to case, as Steam does.
package struct DepotScript: Sendable, Hashable {
    /// A path as the script wrote it (`\` turned into `/`), and its line.
    package struct Located: Sendable, Hashable {
        package var text: String
        package var line: Int
    }

    package struct Mapping: Sendable, Hashable {
        package var localPath: Located
        package var depotPath: Located
        package var recursive: Bool
    }

    /// What cannot be converted, and on which line of the script (0: not a line's fault).
    package struct ConvertError: Error, Sendable, Hashable, CustomStringConvertible {
        package var line: Int
        package var message: String
        package var description: String { line > 0 ? "line \(line): \(message)" : message }
    }

    package var depotID: String?
    package var contentRoot: Located?
    package var mappings: [Mapping] = []
    package var exclusions: [Located] = []
    /// What the script says that a pack has no use for, one line each (`line 12: InstallScript …`).
    package var ignored: [String] = []

    /// Reads a depot build script (bounded: ``KeyValues/Limits``).
    package static func parse(_ bytes: [UInt8]) throws(ConvertError) -> DepotScript {
        let document: KeyValues
        do { document = try KeyValues.parse(bytes) } catch {
            throw ConvertError(line: error.line, message: error.message)
        }
        guard let top = document.entries.first else {
            throw ConvertError(
                line: 1, message: "the script is empty: a depot build script is one \"DepotBuildConfig\" { … } block")
        }
        if document.entries.count > 1 {
            throw ConvertError(
                line: document.entries[1].line, message: "more than one top-level block: give one depot's build script")
        }
        guard top.key.lowercased() == "depotbuildconfig", case .block(let entries) = top.value else {
            if top.key.lowercased() == "appbuild" {
                throw ConvertError(
                    line: top.line,
                    message:
                        "this is an app build script (\"AppBuild\"): convert each depot's build script (depot_build_ID.vdf) it names"
                )
            }
            throw ConvertError(
                line: top.line,
                message: "\"\(top.key)\" is not \"DepotBuildConfig\" { … }: give a Steam depot build script")
        }
        var script = DepotScript()
        for entry in entries {
            switch (entry.key.lowercased(), entry.value) {
            case ("depotid", .string(let value)):
                guard !value.isEmpty, value.utf8.allSatisfy({ (48...57).contains($0) }) else {
                    throw ConvertError(line: entry.line, message: "DepotID \"\(value)\" is not a number")
                }
                script.depotID = value
            case ("contentroot", .string(let value)):
                guard script.contentRoot == nil else {
                    throw ConvertError(line: entry.line, message: "a second ContentRoot")
                }
                script.contentRoot = Located(text: slashes(value), line: entry.line)
            case ("filemapping", .block(let fields)):
                script.mappings.append(try mapping(fields, line: entry.line))
            case ("fileexclusion", .string(let value)):
                script.exclusions.append(Located(text: slashes(value), line: entry.line))
            case ("installscript", .string(let value)):
                script.ignored.append(
                    "line \(entry.line): InstallScript \"\(value)\" is ignored (packs run no install scripts)")
            case ("fileproperties", .block):
                script.ignored.append(
                    "line \(entry.line): FileProperties is ignored (a pack's files are read-only; there is no user config to keep)"
                )
            case ("depotid", _), ("contentroot", _), ("fileexclusion", _), ("installscript", _):
                throw ConvertError(line: entry.line, message: "\(entry.key) takes a string, not a block")
            case ("filemapping", _), ("fileproperties", _):
                throw ConvertError(line: entry.line, message: "\(entry.key) takes a { block }, not a string")
            default:
                throw ConvertError(
                    line: entry.line,
                    message:
                        "\"\(entry.key)\" is not understood here; a depot build script has DepotID, ContentRoot, FileMapping, FileExclusion (InstallScript and FileProperties are ignored)"
                )
            }
        }
        guard !script.mappings.isEmpty else {
            throw ConvertError(line: top.line, message: "the depot has no FileMapping: nothing would be packed")
        }
        return script
    }

    private static func mapping(_ fields: [KeyValues.Entry], line: Int) throws(ConvertError) -> Mapping {
        var local: Located?
        var depot: Located?
        var recursive = false
        for field in fields {
            guard case .string(let value) = field.value else {
                throw ConvertError(line: field.line, message: "\(field.key) takes a string, not a block")
            }
            switch field.key.lowercased() {
            case "localpath": local = Located(text: slashes(value), line: field.line)
            case "depotpath": depot = Located(text: slashes(value), line: field.line)
            case "recursive":
                guard value == "0" || value == "1" else {
                    throw ConvertError(line: field.line, message: "recursive is \"0\" or \"1\", not \"\(value)\"")
                }
                recursive = value == "1"
            default:
                throw ConvertError(
                    line: field.line,
                    message:
                        "\"\(field.key)\" is not understood in a FileMapping; it has LocalPath, DepotPath and recursive"
                )
            }
        }
        guard let local else { throw ConvertError(line: line, message: "the FileMapping has no LocalPath") }
        return Mapping(localPath: local, depotPath: depot ?? Located(text: ".", line: line), recursive: recursive)
    }

    private static func slashes(_ text: String) -> String { text.replacingOccurrences(of: "\\", with: "/") }

    /// Whether `path` is absolute: `/…`, or a Windows drive (`D:/…`).
    static func isAbsolute(_ path: String) -> Bool {
        if path.hasPrefix("/") { return true }
        let bytes = Array(path.utf8)
        return bytes.count >= 2 && bytes[1] == UInt8(ascii: ":")
            && ((65...90).contains(bytes[0]) || (97...122).contains(bytes[0]))
    }

    /// `path` made relative to `root` (both `/`-separated): its normalized parts, refused when
    /// it leaves the root (`..` above it, an absolute path elsewhere).
    static func inside(
        _ path: Located, root: String, what: String, within: String = "ContentRoot"
    ) throws(ConvertError) -> String {
        var text = path.text
        if isAbsolute(text) {
            let base = root.hasSuffix("/") ? root : root + "/"
            guard text.hasPrefix(base) else {
                throw ConvertError(
                    line: path.line, message: "\(what) \"\(path.text)\" is outside ContentRoot (\(root))")
            }
            text = String(text.dropFirst(base.count))
        }
        var parts: [Substring] = []
        for part in text.split(separator: "/", omittingEmptySubsequences: true) where part != "." {
            guard part != ".." else {
                throw ConvertError(
                    line: path.line, message: "\(what) \"\(path.text)\" leaves \(within) (..): it must stay inside it")
            }
            parts.append(part)
        }
        return parts.joined(separator: "/")
    }
}
