import Foundation

/// The status line and headers of one HTTP response, as the header callback collects them.
public struct ResponseHead: Sendable, Equatable {
    public var status: Int = 0
    public var reason: String = ""
    /// Header fields with lowercased names; a repeated field keeps its last value.
    public var fields: [String: String] = [:]

    public init(status: Int = 0, reason: String = "", fields: [String: String] = [:]) {
        self.status = status
        self.reason = reason
        self.fields = fields
    }

    public subscript(_ name: String) -> String? { fields[name.lowercased()] }

    /// Feeds one header line (with or without CRLF). Returns true at the blank line that ends a
    /// final (non-1xx) response head.
    public mutating func consume(line raw: String) -> Bool {
        var line = Substring(raw)
        // "\r\n" is one Character (a grapheme cluster), so compare by newline-ness.
        while let last = line.last, last.isNewline { line.removeLast() }
        if line.hasPrefix("HTTP/") {
            // A new response (after a 1xx, or a new attempt): start over.
            self = ResponseHead()
            let parts = line.split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            reason = parts.count > 2 ? String(parts[2]) : ""
            return false
        }
        if line.isEmpty { return status >= 200 }
        guard let colon = line.firstIndex(of: ":") else { return false }
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        fields[name] = value
        return false
    }

    /// `Content-Length`, if present and valid.
    public var contentLength: Int64? { self["content-length"].flatMap { Int64($0) }.flatMap { $0 >= 0 ? $0 : nil } }

    /// A strong ETag (weak ones cannot validate a range).
    public var strongETag: String? {
        guard let etag = self["etag"], !etag.hasPrefix("W/"), !etag.isEmpty else { return nil }
        return etag
    }

    /// The validator to send in `If-Range` next time: a strong ETag, else Last-Modified.
    public var validator: String? { strongETag ?? self["last-modified"] }
}

/// A parsed `Content-Range: bytes first-last/total` (or `bytes */total`).
public struct ContentRange: Sendable, Equatable {
    public var first: Int64?
    public var last: Int64?
    public var total: Int64?

    public init?(_ value: String) {
        guard value.hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst(6)
        let parts = spec.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        total = parts[1] == "*" ? nil : Int64(parts[1])
        if parts[1] != "*" && total == nil { return nil }
        if parts[0] == "*" {
            first = nil
            last = nil
        } else {
            let bounds = parts[0].split(separator: "-", maxSplits: 1)
            guard bounds.count == 2, let a = Int64(bounds[0]), let b = Int64(bounds[1]), a <= b else { return nil }
            first = a
            last = b
        }
    }
}
