import BACore
import Foundation

/// Reads typed, checked values out of a decoded `Info.plist`, throwing errors that name the file,
/// the key, the type expected and what was found.
struct PlistReader {
    /// The `Info.plist` path, for error messages.
    let path: String
    /// The key path of the dictionary being read (`"BAInitialDownloadRestrictions."`), or "" at the top.
    var prefix = ""

    /// Reads and decodes the file; its top level must be a dictionary.
    static func readRoot(path: String) throws(AppBundleError) -> [String: Any] {
        let bytes: [UInt8]
        do {
            // One byte more than the limit tells "exactly at the limit" from "over it"; a FIFO or
            // a device is refused without blocking (RegularFile).
            bytes = try RegularFile.read(path, limit: AppBundle.maximumInfoPlistSize)
        } catch let refusal {
            if refusal.isMissing {
                return try fail(
                    AppBundleError(
                        .missingInfoPlist, path: path,
                        message: "no Info.plist: an app directory needs one with at least CFBundleIdentifier, "
                            + "CFBundleShortVersionString and BAAppGroupID"))
            }
            if refusal.message.contains("larger than") {
                return try fail(
                    AppBundleError(
                        .malformedInfoPlist, path: path,
                        message: "is larger than \(AppBundle.maximumInfoPlistSize) bytes; is it really an Info.plist?"))
            }
            return try fail(AppBundleError(.malformedInfoPlist, path: path, message: "cannot be read: \(refusal)"))
        }
        let data = Data(bytes)
        let decoded: Any
        do {
            decoded = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            return try fail(
                AppBundleError(
                    .malformedInfoPlist, path: path,
                    message: "is not a valid property list (XML or binary): \(reason(error))"))
        }
        guard let root = decoded as? [String: Any] else {
            return try fail(
                AppBundleError(
                    .malformedInfoPlist, path: path,
                    message: "must hold a dictionary at the top level, found \(PlistType(of: decoded))"))
        }
        return root
    }

    /// Throws `error`; lets the guards above read as one expression each.
    private static func fail<T>(_ error: AppBundleError) throws(AppBundleError) -> T { throw error }

    /// Foundation's most specific explanation of a read or parse failure.
    private static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let debug = nsError.userInfo[NSDebugDescriptionErrorKey] as? String { return debug }
        return nsError.localizedDescription
    }

    /// A reader for the dictionary under `key`.
    func nested(in key: String) -> PlistReader { PlistReader(path: path, prefix: prefix + key + ".") }

    func error(_ code: AppBundleError.Code, _ key: String, _ message: String) -> AppBundleError {
        AppBundleError(code, path: path, key: prefix + key, message: "\(prefix + key) \(message)")
    }

    func wrongType(_ key: String, expected: String, found value: Any) -> AppBundleError {
        error(.wrongType, key, "must be \(expected), found \(PlistType(of: value))")
    }

    // MARK: Values

    func optionalString(_ key: String, in dictionary: [String: Any]) throws(AppBundleError) -> String? {
        guard let value = dictionary[key] else { return nil }
        guard let string = value as? String else { throw wrongType(key, expected: "a string", found: value) }
        return string
    }

    func optionalNonEmptyString(_ key: String, in dictionary: [String: Any]) throws(AppBundleError) -> String? {
        guard let string = try optionalString(key, in: dictionary) else { return nil }
        guard !string.isEmpty else { throw error(.invalidValue, key, "must not be empty") }
        return string
    }

    func optionalBool(_ key: String, in dictionary: [String: Any]) throws(AppBundleError) -> Bool? {
        guard let value = dictionary[key] else { return nil }
        guard let bool = value as? Bool else {
            throw wrongType(key, expected: "a boolean (<true/> or <false/>)", found: value)
        }
        return bool
    }

    /// An optional Ed25519 public key: 32 bytes in base64.
    func optionalPublicKey(_ key: String, in dictionary: [String: Any]) throws(AppBundleError) -> [UInt8]? {
        guard let string = try optionalString(key, in: dictionary) else { return nil }
        let trimmed = string.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let data = Data(base64Encoded: trimmed), data.count == 32 else {
            throw error(
                .invalidValue, key,
                "is not an Ed25519 public key (32 bytes in base64): use the line `ba pack keygen` printed")
        }
        return Array(data)
    }

    /// A required string that passes `DownloadRules.checkIdentifier`.
    func identifier(_ key: String, in dictionary: [String: Any], what: String) throws(AppBundleError) -> String {
        guard let string = try optionalString(key, in: dictionary) else {
            throw error(.missingKey, key, "is required: add the \(what) as a string")
        }
        // Bundle and group identifiers become folders of their own under basd's state folder.
        if let violation = DownloadRules.checkFolderName(string, what: what) {
            throw error(.invalidValue, key, "is invalid: \(violation.reason)")
        }
        return string
    }

    /// An optional desktop file id (`org.example.Game`, or `org.example.Game.desktop`, returned
    /// without `.desktop`): letters, digits, `-`, `_` and `.`, as the Desktop Entry
    /// Specification's file ids are.
    func desktopEntry(_ key: String, in dictionary: [String: Any]) throws(AppBundleError) -> String? {
        guard var id = try optionalNonEmptyString(key, in: dictionary) else { return nil }
        if id.hasSuffix(".desktop") { id.removeLast(".desktop".count) }
        let allowed = id.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        guard !id.isEmpty, id.utf8.count <= 255, allowed, !id.hasPrefix(".") else {
            throw error(
                .invalidValue, key,
                "is not a desktop file id: give the name of the app's .desktop file (e.g. org.example.Game), "
                    + "letters, digits, '-', '_' and '.' only")
        }
        return id
    }

    /// An optional https (or loopback http) URL string, checked with `DownloadRules.checkURL`.
    func manifestURL(_ key: String, in dictionary: [String: Any]) throws(AppBundleError) -> String? {
        guard let string = try optionalString(key, in: dictionary) else { return nil }
        if let violation = DownloadRules.checkURL(string) {
            throw error(.invalidValue, key, "is invalid: \(violation.reason)")
        }
        return string
    }

    /// An optional path relative to `directory`, returned absolute. It must stay inside the
    /// directory: no `..` component at all (even `a/../b`), no leading `/`, no NUL.
    func extensionPath(
        _ key: String, in dictionary: [String: Any], directory: String
    ) throws(AppBundleError)
        -> String?
    {
        guard let string = try optionalString(key, in: dictionary) else { return nil }
        if string.utf8.contains(0) { throw error(.invalidValue, key, "must not contain a NUL byte") }
        if string.hasPrefix("/") {
            throw error(
                .invalidValue, key,
                "must be relative to the app directory, found the absolute path '\(string)'")
        }
        // Symbolic links are not resolved: the library need not exist yet, and the directory's
        // owner controls what is inside it anyway.
        var components: [Substring] = []
        for component in string.split(separator: "/", omittingEmptySubsequences: true) {
            switch component {
            case ".": continue
            case "..":
                throw error(
                    .invalidValue, key,
                    "must stay inside the app directory, found '..' in '\(string)'")
            default: components.append(component)
            }
        }
        guard !components.isEmpty else {
            throw error(.invalidValue, key, "must name a file inside the app directory, found '\(string)'")
        }
        let base = directory.hasSuffix("/") ? directory : directory + "/"
        return base + components.joined(separator: "/")
    }

    func optionalDictionary(_ key: String, in dictionary: [String: Any]) throws(AppBundleError) -> [String: Any]? {
        guard let value = dictionary[key] else { return nil }
        guard let nested = value as? [String: Any] else {
            throw wrongType(key, expected: "a dictionary", found: value)
        }
        return nested
    }

    /// An optional non-negative integer (a byte count).
    func optionalSize(_ key: String, in dictionary: [String: Any]) throws(AppBundleError) -> Int64? {
        guard let value = dictionary[key] else { return nil }
        switch PlistType(of: value) {
        case .integer(let integer?):
            guard integer >= 0 else {
                throw error(.invalidValue, key, "must be a non-negative number of bytes, found \(integer)")
            }
            return integer
        case .integer(nil):
            throw error(.invalidValue, key, "must be a number of bytes up to \(Int64.max), found a larger integer")
        default:
            throw wrongType(key, expected: "a non-negative integer (bytes)", found: value)
        }
    }

    /// An optional array of host names, each optionally prefixed by a `*.` wildcard; lowercased.
    func optionalHostList(_ key: String, in dictionary: [String: Any]) throws(AppBundleError) -> [String]? {
        guard let value = dictionary[key] else { return nil }
        guard let array = value as? [Any] else {
            throw wrongType(key, expected: "an array of host strings", found: value)
        }
        var hosts: [String] = []
        for (index, element) in array.enumerated() {
            guard let host = element as? String else {
                throw error(
                    .wrongType, key, "must hold only strings, found \(PlistType(of: element)) at index \(index)")
            }
            guard Self.isHostPattern(host) else {
                throw error(
                    .invalidValue, key,
                    "entry \(index) '\(host)' is not a host name (like cdn.example.com) or a '*.' wildcard "
                        + "(like *.example.com)")
            }
            hosts.append(host.lowercased())
        }
        return hosts
    }

    /// A host name, IPv4 or bracketless IPv6 literal, optionally prefixed by `*.`: letters, digits,
    /// `-`, `.` and `:` only, with no empty dot-separated label.
    static func isHostPattern(_ entry: String) -> Bool {
        let host = entry.hasPrefix("*.") ? entry.dropFirst(2) : Substring(entry)
        guard !host.isEmpty else { return false }
        let allowed = host.utf8.allSatisfy { byte in
            (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: ":")
        }
        return allowed && !host.split(separator: ".", omittingEmptySubsequences: false).contains { $0.isEmpty }
    }
}

/// The property-list type of a decoded value, named for error messages ("an integer").
enum PlistType: CustomStringConvertible, Equatable {
    /// An integer; nil when it does not fit in `Int64`.
    case integer(Int64?)
    case string, real, boolean, array, dictionary, data, date, other

    init(of value: Any) {
        // On Linux, Foundation decodes <true/> as a Swift Bool but every number as an NSNumber, so
        // Bool is tested first and reals are told from integers by the NSNumber's C type.
        if value is String {
            self = .string
        } else if type(of: value) == Bool.self {
            self = .boolean
        } else if let number = value as? NSNumber {
            switch String(cString: number.objCType) {
            case "d", "f": self = .real
            case "c", "B": self = .boolean
            case "Q", "L", "I", "S", "C":
                let unsigned = number.uint64Value
                self = .integer(unsigned <= UInt64(Int64.max) ? Int64(unsigned) : nil)
            default: self = .integer(number.int64Value)
            }
        } else if value is [Any] {
            self = .array
        } else if value is [String: Any] || value is [AnyHashable: Any] {
            self = .dictionary
        } else if value is Data {
            self = .data
        } else if value is Date {
            self = .date
        } else {
            self = .other
        }
    }

    var description: String {
        switch self {
        case .integer: "an integer"
        case .string: "a string"
        case .real: "a real number"
        case .boolean: "a boolean"
        case .array: "an array"
        case .dictionary: "a dictionary"
        case .data: "data"
        case .date: "a date"
        case .other: "an unknown value"
        }
    }
}
