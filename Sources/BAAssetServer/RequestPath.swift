/// Turning a request target into the path of an asset, refusing anything that could leave the served tree.
enum RequestPath {
    /// The percent-decoded path of `target` without query or fragment, or `nil` when the target is refused:
    /// not a path, bad percent-encoding or UTF-8, a NUL byte (it would cut the path short at `open`), or a
    /// `..` segment, before or after decoding (`/../x`, `/%2e%2e/x`).
    ///
    /// Absolute-form targets (`http://host/path`, which a proxy-minded client may send) are reduced to the path.
    static func decode(_ target: String) -> String? {
        var rest = Substring(target)
        if let scheme = rest.range(of: "://"), rest[..<scheme.lowerBound].allSatisfy({ $0.isLetter }) {
            let authorityAndPath = rest[scheme.upperBound...]
            rest = authorityAndPath.firstIndex(of: "/").map { authorityAndPath[$0...] } ?? "/"
        }
        if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        guard rest.first == "/", let decoded = percentDecode(rest) else { return nil }
        guard !decoded.utf8.contains(0), !decoded.split(separator: "/").contains("..") else { return nil }
        return decoded
    }

    /// The key under which `setFile` and `setBehavior` store `path`: always with a leading slash.
    static func key(_ path: String) -> String {
        path.hasPrefix("/") ? path : "/" + path
    }

    private static func percentDecode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
