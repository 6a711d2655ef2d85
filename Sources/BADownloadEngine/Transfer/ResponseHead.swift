/// The status line and headers of one HTTP response, as the header callback collects them.
package struct ResponseHead: Sendable, Equatable {
    package var status: Int = 0
    package var reason: String = ""
    /// Header fields with lowercased names; a repeated field keeps its last value.
    package var fields: [String: String] = [:]

    package init(status: Int = 0, reason: String = "", fields: [String: String] = [:]) {
        self.status = status
        self.reason = reason
        self.fields = fields
    }

    package subscript(_ name: String) -> String? { fields[name.lowercased()] }

    /// The header fields the engine reads; others are skipped without building Strings.
    static let interestingFields: [String] = [
        "content-length", "content-range", "etag", "last-modified", "location", "retry-after", "www-authenticate",
    ]
    /// The same names as bytes, matched against a line's field name without allocating.
    private static let interestingFieldBytes: [[UInt8]] = interestingFields.map { Array($0.utf8) }

    /// The interesting field whose name `name` is, compared ASCII-case-insensitively.
    private static func interestingField(_ name: UnsafeRawBufferPointer) -> String? {
        candidates: for (index, candidate) in interestingFieldBytes.enumerated() where candidate.count == name.count {
            for offset in 0..<name.count {
                var byte = name[offset]
                if byte >= 0x41 && byte <= 0x5A { byte += 32 }
                if byte != candidate[offset] { continue candidates }
            }
            return interestingFields[index]
        }
        return nil
    }

    /// Feeds one header line (with or without CRLF). Returns true at the blank line that ends a
    /// final (non-1xx) response head.
    package mutating func consume(line: String) -> Bool {
        var copy = line
        return copy.withUTF8 { consume(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Feeds one header line as bytes (what libcurl hands over), parsed without Foundation.
    package mutating func consume(bytes raw: UnsafeRawBufferPointer) -> Bool {
        var end = raw.count
        while end > 0 && (raw[end - 1] == 0x0A || raw[end - 1] == 0x0D) { end -= 1 }
        let line = UnsafeRawBufferPointer(rebasing: raw[0..<end])
        if line.count >= 5 && line[0] == 0x48 && line[1] == 0x54 && line[2] == 0x54 && line[3] == 0x50
            && line[4] == 0x2F
        {  // "HTTP/"
            // A new response (after a 1xx, or a new attempt): start over.
            self = ResponseHead()
            var index = 0
            while index < line.count && line[index] != 0x20 { index += 1 }
            while index < line.count && line[index] == 0x20 { index += 1 }
            var code = 0
            var digits = 0
            while index < line.count, (0x30...0x39).contains(line[index]), digits < 3 {
                code = code * 10 + Int(line[index] - 0x30)
                index += 1
                digits += 1
            }
            status = digits == 3 ? code : 0
            while index < line.count && line[index] == 0x20 { index += 1 }
            reason = String(decoding: UnsafeRawBufferPointer(rebasing: line[index...]), as: UTF8.self)
            return false
        }
        if line.isEmpty { return status >= 200 }
        var colon = 0
        while colon < line.count && colon < 32 && line[colon] != 0x3A { colon += 1 }
        guard colon > 0, colon < 32, colon < line.count,
            let name = Self.interestingField(UnsafeRawBufferPointer(rebasing: line[0..<colon]))
        else { return false }
        var start = colon + 1
        var stop = line.count
        while start < stop && (line[start] == 0x20 || line[start] == 0x09) { start += 1 }
        while stop > start && (line[stop - 1] == 0x20 || line[stop - 1] == 0x09) { stop -= 1 }
        fields[name] = String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<stop]), as: UTF8.self)
        return false
    }

    /// `Content-Length`, if present and valid.
    package var contentLength: Int64? { self["content-length"].flatMap { Int64($0) }.flatMap { $0 >= 0 ? $0 : nil } }

    /// The validators a partial file of this response's bytes is resumed with (``ResumeValidator``,
    /// as stored), if it has any.
    package var validator: String? { ResumeValidator(self)?.stored }
}

/// A parsed `Content-Range: bytes first-last/total` (or `bytes */total`).
package struct ContentRange: Sendable, Equatable {
    package var first: Int64?
    package var last: Int64?
    package var total: Int64?

    package init?(_ value: String) {
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
