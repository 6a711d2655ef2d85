/// A server's `WWW-Authenticate` value, read once for both receivers of a credential request (the
/// app's delegate and the extension), so they see the same protection space.
package struct ChallengeHeader: Sendable, Equatable {
    /// Foundation's name of the authentication method: `NSURLAuthenticationMethodHTTPBasic`,
    /// `NSURLAuthenticationMethodHTTPDigest`, or `NSURLAuthenticationMethodDefault` for another scheme.
    package var authenticationMethod: String
    /// The `realm="…"` parameter (matched case-insensitively), nil when absent.
    package var realm: String?

    /// Reads `header` (e.g. `Basic realm="assets"`).
    package init(_ header: String) {
        let scheme = String(header.prefix { $0 != " " && $0 != "\t" }).lowercased()
        switch scheme {
        case "basic": authenticationMethod = "NSURLAuthenticationMethodHTTPBasic"
        case "digest": authenticationMethod = "NSURLAuthenticationMethodHTTPDigest"
        default: authenticationMethod = "NSURLAuthenticationMethodDefault"
        }
        realm = Self.realm(in: header)
    }

    /// The `realm="…"` parameter of a `WWW-Authenticate` value.
    static func realm(in header: String) -> String? {
        let bytes = Array(header.utf8)
        let key = Array("realm=\"".utf8)
        guard bytes.count >= key.count else { return nil }
        for start in 0...(bytes.count - key.count) {
            // ASCII case folding only: the key is ASCII, and other bytes must match exactly.
            let matches = (0..<key.count).allSatisfy { bytes[start + $0] | 0x20 == key[$0] | 0x20 }
            guard matches else { continue }
            let rest = bytes[(start + key.count)...]
            guard let end = rest.firstIndex(of: UInt8(ascii: "\"")) else { return nil }
            return String(decoding: rest[..<end], as: UTF8.self)
        }
        return nil
    }
}
