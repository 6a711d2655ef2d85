/// The checks a download must pass before anything trusts it, shared by the public API
/// (`scheduleDownload`) and the host (downloads an extension returns).
///
/// Each violation carries Apple's `BAErrorCode` raw value and a reason that says how to fix it.
package enum DownloadRules {
    /// `BADownload.Priority` values.
    package static let minimumPriority: Int64 = 0
    package static let defaultPriority: Int64 = 50
    package static let maximumPriority: Int64 = 100

    /// Longest identifier accepted, in UTF-8 bytes.
    package static let maximumIdentifierLength = 1024
    /// Longest URL accepted, in UTF-8 bytes.
    package static let maximumURLLength = 8192
    /// Largest `fileSize` accepted: 1 TiB.
    package static let maximumFileSize: Int64 = 1 << 40

    /// A rule a download broke.
    package struct Violation: Error, Equatable, Sendable, CustomStringConvertible {
        /// `BAErrorCode` raw value (0 downloadInvalid, 109 essential not permitted, …).
        package var code: Int
        package var reason: String
        package init(code: Int, reason: String) {
            self.code = code
            self.reason = reason
        }
        package var description: String { reason }
    }

    static let downloadInvalid = AppleErrorCode.downloadInvalid.rawValue
    static let essentialNotPermitted = AppleErrorCode.downloadEssentialDownloadNotPermitted.rawValue

    /// Checks an identifier: non-empty, at most 1024 bytes, no `/`, no `..`, no NUL, no control
    /// characters. Identifiers become file names, so these rules keep them inside their folder.
    /// Nor may it hold a bidirectional control (U+061C, U+200E–U+200F, U+202A–U+202E,
    /// U+2066–U+2069) or start or end with white space: either would let one name show as another
    /// in `ba downloads` and `ba apps` (`"moc.elpmaxe\u{202E}"` displays as a reversed name).
    package static func checkIdentifier(_ identifier: String, what: String = "identifier") -> Violation? {
        func invalid(_ why: String) -> Violation {
            Violation(code: downloadInvalid, reason: "\(what) \(quoted(identifier)) \(why)")
        }
        if identifier.isEmpty { return Violation(code: downloadInvalid, reason: "\(what) is empty") }
        // One pass over the UTF-8 bytes: this runs for every returned download.
        var length = 0
        var previousWasDot = false
        var problem: String?
        // The two bytes before this one, for the bidirectional controls' UTF-8 sequences.
        var before1: UInt8 = 0
        var before2: UInt8 = 0
        for byte in identifier.utf8 {
            length += 1
            switch byte {
            case 0: problem = problem ?? "contains a NUL byte"
            case UInt8(ascii: "."):
                if previousWasDot { problem = problem ?? "contains '..'" }
            case UInt8(ascii: "/"): problem = problem ?? "contains '/'"
            case 0x01..<0x20, 0x7F: problem = problem ?? "contains a control character"
            case 0x8E, 0x8F, 0xAA...0xAE, 0xA6...0xA9, 0x9C:
                if let scalar = bidirectionalControl(before2, before1, byte) {
                    problem =
                        problem
                        ?? "contains the bidirectional control U+\(String(scalar, radix: 16, uppercase: true)), which makes a name display as another; remove it"
                }
            default: break
            }
            previousWasDot = byte == UInt8(ascii: ".")
            before2 = before1
            before1 = byte
        }
        if length > maximumIdentifierLength { return invalid("is longer than \(maximumIdentifierLength) bytes") }
        if let problem { return invalid(problem) }
        if let first = identifier.unicodeScalars.first, let last = identifier.unicodeScalars.last,
            first.properties.isWhitespace || last.properties.isWhitespace
        {
            return invalid("starts or ends with white space, which does not show where it is listed; remove it")
        }
        if identifier == "." { return invalid("is '.', which names the folder it would be created in") }
        return nil
    }

    /// Checks an identifier that becomes a folder of its own under basd's state folder (a bundle
    /// identifier, an app group identifier): ``checkIdentifier(_:what:)``, and no leading `.`, so
    /// it can never name basd's own folders (`.background-assets`, `.ba-partial`) or alias
    /// another one.
    package static func checkFolderName(_ identifier: String, what: String) -> Violation? {
        if let violation = checkIdentifier(identifier, what: what) { return violation }
        if identifier.hasPrefix(".") {
            return Violation(
                code: downloadInvalid,
                reason: "\(what) \(quoted(identifier)) starts with '.'; such names are kept for basd's own folders")
        }
        return nil
    }

    /// Checks a path a client names (an app directory, an extension library): absolute, no NUL or
    /// control character, no `.` or `..` component, not a URL. The file itself is checked when it
    /// is read.
    package static func checkPath(_ path: String, what: String) -> Violation? {
        func invalid(_ why: String) -> Violation {
            Violation(code: downloadInvalid, reason: "\(what) \(quoted(path)) \(why)")
        }
        if path.isEmpty { return Violation(code: downloadInvalid, reason: "\(what) is empty") }
        if path.utf8.count > 4096 { return invalid("is longer than 4096 bytes") }
        if path.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            return invalid("contains a NUL or control character")
        }
        guard path.hasPrefix("/") else { return invalid("is not an absolute path (a URL is not a path)") }
        for component in path.split(separator: "/") where component == "." || component == ".." {
            return invalid("contains a '\(component)' component; give the path without it")
        }
        return nil
    }

    /// Checks a URL: https, or plain http to a loopback host (development).
    package static func checkURL(_ url: String) -> Violation? {
        guard url.utf8.count <= maximumURLLength else {
            return Violation(code: downloadInvalid, reason: "URL is longer than \(maximumURLLength) bytes")
        }
        // A NUL would cut the URL short where C reads it; a control character has no place in one.
        guard !url.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            return Violation(
                code: downloadInvalid,
                reason: "URL \(quoted(url)) contains a NUL or control character; percent-encode it")
        }
        guard let parsed = ParsedURL(url) else {
            return Violation(
                code: downloadInvalid, reason: "URL \(quoted(url)) is not an absolute http(s) URL with a host")
        }
        switch parsed.scheme {
        case "https":
            return nil
        case "http" where parsed.isLoopback:
            return nil
        case "http":
            return Violation(
                code: downloadInvalid,
                reason: "URL \(quoted(url)) uses plain http; use https (http is allowed only for loopback hosts)")
        default:
            return Violation(
                code: downloadInvalid, reason: "URL \(quoted(url)) has scheme '\(parsed.scheme)'; use https")
        }
    }

    /// Checks every field of one download, in the context of the content request that produced it
    /// (`nil` when it was not returned from `downloads(for:…)`, e.g. scheduled later).
    package static func check(_ download: DownloadDescription, contentRequest: Int32? = nil) -> Violation? {
        guard download.isWellFormed else {
            return Violation(
                code: downloadInvalid,
                reason:
                    "download \(quoted(download.identifier)) has a malformed field (invalid UTF-8, or a NULL string with a length)"
            )
        }
        if let violation = checkIdentifier(download.identifier) { return violation }
        if download.isAssetPack, let violation = checkAssetPack(download) { return violation }
        if let violation = checkURL(download.url) {
            return Violation(
                code: violation.code, reason: "download \(quoted(download.identifier)): \(violation.reason)")
        }
        if let group = download.applicationGroupIdentifier,
            let violation = checkFolderName(group, what: "application group identifier")
        {
            return Violation(
                code: violation.code, reason: "download \(quoted(download.identifier)): \(violation.reason)")
        }
        if download.fileSize < 0 || download.fileSize > maximumFileSize {
            return Violation(
                code: downloadInvalid,
                reason:
                    "download \(quoted(download.identifier)) has fileSize \(download.fileSize); it must be between 0 and \(maximumFileSize)"
            )
        }
        if download.isEssential {
            if download.fileSize <= 0 {
                return Violation(
                    code: downloadInvalid,
                    reason: "essential download \(quoted(download.identifier)) needs a fileSize greater than 0")
            }
            if let request = contentRequest, request != 1, request != 2 {
                return Violation(
                    code: essentialNotPermitted,
                    reason:
                        "essential download \(quoted(download.identifier)) is only permitted for install and update requests; use removingEssential()"
                )
            }
        }
        if let sha = download.sha256, sha.utf8.count != 64 || !sha.utf8.allSatisfy(isHexDigit) {
            return Violation(
                code: downloadInvalid,
                reason: "download \(quoted(download.identifier)) has a sha256 that is not 64 hex digits")
        }
        for header in download.headers
        where !isToken(header.name) || header.value.utf8.contains(where: { $0 == 10 || $0 == 13 || $0 == 0 }) {
            return Violation(
                code: downloadInvalid,
                reason: "download \(quoted(download.identifier)) has an invalid header \(quoted(header.name))")
        }
        return nil
    }

    /// The rules only an asset-pack download has (``DownloadDescription/isAssetPack``): a URL
    /// (a pack without one is a managed pack, which basd's pack service fetches), an ID that can
    /// name the pack's folder, and the index's SHA-256, which the whole pack's integrity hangs on.
    static func checkAssetPack(_ download: DownloadDescription) -> Violation? {
        let id = quoted(download.identifier)
        if download.url.isEmpty {
            return Violation(
                code: downloadInvalid,
                reason:
                    "asset pack download \(id) has no URL: download(for:) needs a pack from a self-hosted manifest (AssetPackManifest(contentsOf:appGroupID:)); a managed pack (from AssetPackManager) is made local with AssetPackManager.ensureLocalAvailability(of:)"
            )
        }
        if let violation = checkFolderName(download.identifier, what: "asset pack ID") { return violation }
        guard let sha = download.sha256, sha.utf8.count == 64, sha.utf8.allSatisfy(isHexDigit) else {
            return Violation(
                code: downloadInvalid,
                reason:
                    "asset pack download \(id) has no indexSHA256: the manifest entry must give its index's SHA-256 (64 hex digits), which the pack's files are checked against"
            )
        }
        return nil
    }

    /// The outcome of validating the set an extension returned.
    package struct SetValidation: Sendable {
        package var accepted: [DownloadDescription] = []
        package var rejected: [(download: DownloadDescription, violation: Violation)] = []
    }

    /// Validates a returned set: every download on its own, then identifier uniqueness (the first
    /// one with an identifier wins; later ones are rejected with code 100).
    package static func validate(_ downloads: [DownloadDescription], contentRequest: Int32?) -> SetValidation {
        var result = SetValidation()
        var seen = Set<String>()
        for download in downloads {
            if let violation = check(download, contentRequest: contentRequest) {
                result.rejected.append((download, violation))
            } else if !seen.insert(download.identifier).inserted {
                result.rejected.append(
                    (
                        download,
                        Violation(
                            code: 100,
                            reason:
                                "identifier \(quoted(download.identifier)) is used by another download in the same set")
                    ))
            } else {
                result.accepted.append(download)
            }
        }
        return result
    }

    /// The bidirectional control whose UTF-8 encoding ends with `a b c` (or `b c`), if any:
    /// U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069.
    static func bidirectionalControl(_ a: UInt8, _ b: UInt8, _ c: UInt8) -> UInt32? {
        if b == 0xD8 && c == 0x9C { return 0x061C }
        guard a == 0xE2 else { return nil }
        switch (b, c) {
        case (0x80, 0x8E...0x8F), (0x80, 0xAA...0xAE), (0x81, 0xA6...0xA9):
            return 0x2000 | (UInt32(b & 0x0F) << 6) | UInt32(c & 0x3F)
        default: return nil
        }
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (97...102).contains(byte) || (65...70).contains(byte)
    }

    static func isToken(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                (33...126).contains(byte) && !"()<>@,;:\\\"/[]?={}".utf8.contains(byte)
            }
    }

    /// A value quoted for an error message, with control and format characters (bidirectional
    /// controls, zero-width ones) escaped, so the message shows what was sent.
    static func quoted(_ value: String) -> String {
        var out = "'"
        for scalar in value.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F || scalar.properties.generalCategory == .format {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out + "'"
    }
}

/// The scheme and host of an absolute URL, parsed without Foundation.
package struct ParsedURL: Sendable, Equatable {
    /// Lowercased scheme.
    package var scheme: String
    /// Lowercased host; IPv6 literals without brackets.
    package var host: String
    /// The port the URL names (1–65535), or nil when it names none (or one that is not a port).
    package var port: Int?
    /// Whether the URL's authority has a `:` after its host with something that is not a port
    /// (`host:x`, `host:99999`): no port-bound rule can match it.
    package var hasInvalidPort = false

    /// The port a connection uses: the one the URL names, else its scheme's (80 for http, 443 for
    /// https); nil for another scheme without one, or an invalid port.
    package var effectivePort: Int? {
        if hasInvalidPort { return nil }
        if let port { return port }
        switch scheme {
        case "http": return 80
        case "https": return 443
        default: return nil
        }
    }

    package init?(_ string: String) {
        // Byte-level parsing: URLs are ASCII in their scheme and delimiters, and this runs for
        // every returned download.
        let bytes = Array(string.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return nil }
        let schemeBytes = bytes[..<colon]
        guard
            schemeBytes.allSatisfy({
                Self.isAlphanumeric($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
            })
        else { return nil }
        guard bytes.count >= colon + 3, bytes[colon + 1] == UInt8(ascii: "/"), bytes[colon + 2] == UInt8(ascii: "/")
        else { return nil }
        var authorityEnd = colon + 3
        while authorityEnd < bytes.count,
            ![UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#")].contains(bytes[authorityEnd])
        {
            authorityEnd += 1
        }
        var start = colon + 3
        if let at = bytes[start..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) { start = at + 1 }
        var hostBytes: ArraySlice<UInt8>
        // Where the host ends: a `:` there starts the port.
        var hostEnd: Int
        if start < authorityEnd && bytes[start] == UInt8(ascii: "[") {
            guard let close = bytes[start..<authorityEnd].firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostBytes = bytes[(start + 1)..<close]
            hostEnd = close + 1
        } else {
            hostEnd = bytes[start..<authorityEnd].firstIndex(of: UInt8(ascii: ":")) ?? authorityEnd
            hostBytes = bytes[start..<hostEnd]
        }
        guard !hostBytes.isEmpty, !hostBytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else { return nil }
        self.scheme = Self.asciiLowercased(schemeBytes)
        self.host = Self.asciiLowercased(hostBytes)
        if hostEnd < authorityEnd {
            // `:` then the port; an empty one (`host:`) is the scheme's default, as RFC 3986 says.
            let portBytes = bytes[(hostEnd + 1)..<authorityEnd]
            if bytes[hostEnd] != UInt8(ascii: ":") {
                hasInvalidPort = true
            } else if !portBytes.isEmpty {
                if let port = Self.parsePort(portBytes) { self.port = port } else { hasInvalidPort = true }
            }
        }
    }

    /// A port's digits (1–65535, at most 5 digits), or nil.
    package static func parsePort(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard (1...5).contains(bytes.count), bytes.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        let value = bytes.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        return (1...65_535).contains(value) ? value : nil
    }

    static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
    }

    static func asciiLowercased(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
    }

    /// Whether the host is loopback: `localhost`, `127.0.0.0/8` or `::1`.
    package var isLoopback: Bool {
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}
