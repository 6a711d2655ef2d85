import BAExtensionProtocol

/// Which hosts a download may touch, checked on the first URL and on every redirect hop.
///
/// An entry is a host name (`cdn.example.com`, matched exactly, case-insensitively) or a `*.`
/// wildcard (`*.example.com`, matching any subdomain such as `a.example.com` or
/// `a.b.example.com`, but not `example.com` itself: list both if both are meant).
public struct HostAllowList: Sendable, Equatable {
    public let entries: [String]

    public init(_ entries: [String]) { self.entries = entries.map { $0.lowercased() } }

    /// Whether `host` (lowercased, no brackets) is allowed.
    public func allows(host: String) -> Bool {
        let host = host.lowercased()
        return entries.contains { entry in
            if entry.hasPrefix("*.") {
                let suffix = entry.dropFirst(1)  // ".example.com"
                return host.hasSuffix(suffix) && host.count > suffix.count
            }
            return host == entry
        }
    }
}

/// The URL rules of every hop: https (or loopback http), and the allow-list when there is one.
enum URLPolicy {
    /// nil when `url` may be fetched; else the reason.
    static func check(_ url: String, allowList: HostAllowList?) -> String? {
        if let violation = DownloadRules.checkURL(url) { return violation.reason }
        if let allowList, let parsed = ParsedURL(url), !allowList.allows(host: parsed.host) {
            return "host '\(parsed.host)' is not in the allow-list (\(allowList.entries.joined(separator: ", ")))"
        }
        return nil
    }
}
