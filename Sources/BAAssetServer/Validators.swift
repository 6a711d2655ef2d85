import BAHTTP

/// The validators of one representation: a strong entity tag and a modification time.
///
/// Every 200 and 206 response carries both (`ETag`, `Last-Modified`); `If-Range` is compared against them.
struct Validators: Sendable, Equatable {
    /// A strong entity tag, quoted (`"…"`).
    var etag: String
    /// Seconds since 1970, whole seconds (the resolution of an HTTP date).
    var lastModified: Int64

    /// The `Last-Modified` header value.
    var lastModifiedHeader: String { HTTPDate.format(lastModified) }

    /// A tag derived from the bytes: 64-bit FNV-1a of the contents plus their length.
    ///
    /// Not cryptographic; it only has to change when a test changes a file's contents.
    static func etag(forContents contents: some Sequence<UInt8>) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var count = 0
        for byte in contents {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            count += 1
        }
        return "\"\(hex(hash))-\(hex(UInt64(count)))\""
    }

    /// A tag for a file on disk, from its inode, size and modification time: hashing a 1 GiB benchmark file
    /// on every request would dominate the measurement. (The same trick nginx and Apache use.)
    static func etag(inode: UInt64, size: Int64, modifiedSeconds: Int64, modifiedNanoseconds: Int64) -> String {
        "\"\(hex(inode))-\(hex(UInt64(bitPattern: size)))-\(hex(UInt64(bitPattern: modifiedSeconds)))"
            + ".\(hex(UInt64(bitPattern: modifiedNanoseconds)))\""
    }

    /// `etag` quoted if the caller gave a bare token (`abc` becomes `"abc"`); a quoted tag is kept as it is.
    static func quoted(_ etag: String) -> String {
        etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count >= 2 ? etag : "\"\(etag)\""
    }

    /// Whether an `If-Range` value names these validators (RFC 9110 §13.1.5): an entity tag must match
    /// strongly (a weak tag never matches), an HTTP date must equal `Last-Modified` exactly.
    func matches(ifRange value: String) -> Bool {
        let value = value.trimmingSpaces()
        if value.hasPrefix("W/") { return false }
        if value.hasPrefix("\"") { return value == etag }
        guard let date = HTTPDate.parse(value) else { return false }
        return date == lastModified
    }

    private static func hex(_ value: UInt64) -> String {
        String(value, radix: 16)
    }
}

extension StringProtocol {
    /// The string without leading and trailing spaces and tabs (HTTP's optional whitespace).
    func trimmingSpaces() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}
