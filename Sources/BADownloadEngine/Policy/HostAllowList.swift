import BACore

/// Which hosts a download may touch, checked on the first URL and on every redirect hop.
///
/// An entry is a host name (`cdn.example.com`, matched exactly, case-insensitively), an IP address
/// (`127.0.0.1`, `::1`, without brackets) or a `*.` wildcard (`*.example.com`, matching any subdomain
/// such as `a.example.com` or `a.b.example.com`, but not `example.com` itself: list both if both are
/// meant).
///
/// A list is checked on the URL's text before anything is connected or looked up, so a refused
/// host costs no DNS query.
package struct HostAllowList: Sendable, Equatable {
    package let entries: [String]
    /// Whose list it is, named in a refusal ("basd's allowedHosts setting"); nil for the app's own
    /// pre-launch list (`BADownloadDomainAllowList`), or any list whose owner needs no naming.
    package let owner: String?

    /// A list of `entries` (lowercased) whose owner is not named in refusals.
    package init(_ entries: [String]) { self.init(entries, owner: nil) }

    /// A list of `entries` (lowercased), owned by `owner` ("basd's allowedHosts setting"), named in
    /// refusals.
    package init(_ entries: [String], owner: String?) {
        self.entries = entries.map { $0.lowercased() }
        self.owner = owner
    }

    /// Whether `host` (lowercased, no brackets) is allowed.
    package func allows(host: String) -> Bool {
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

/// The URL rules of every hop: https (or loopback http), and every allow-list there is.
enum URLPolicy {
    /// nil when `url` may be fetched; else the reason. A URL must be allowed by every list in
    /// `allowLists` (basd's `allowedHosts` and an app's pre-launch list both apply); the reason names
    /// the first list that refuses it.
    static func check(_ url: String, allowLists: [HostAllowList]) -> String? {
        if let violation = DownloadRules.checkURL(url) { return violation.reason }
        guard let parsed = ParsedURL(url) else { return nil }
        for list in allowLists where !list.allows(host: parsed.host) {
            let owner = list.owner.map { " of \($0)" } ?? ""
            return "host '\(parsed.host)' is not in the allow-list\(owner) (\(list.entries.joined(separator: ", ")))"
        }
        return nil
    }
}
