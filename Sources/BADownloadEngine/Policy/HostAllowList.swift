import BACore

/// Which hosts (and ports) a download may touch, checked on the first URL and on every redirect hop.
///
/// An entry is a host name (`cdn.example.com`, matched exactly, case-insensitively), an IP address
/// (`127.0.0.1`, `::1`) or a `*.` wildcard (`*.example.com`, matching any subdomain such as
/// `a.example.com` or `a.b.example.com`, but not `example.com` itself: list both if both are
/// meant), optionally with a port (`cdn.example.com:8443`, `127.0.0.1:8080`, `[::1]:8080`): an
/// entry with a port allows that port alone (a URL without one has its scheme's, 80 or 443), one
/// without allows every port.
///
/// A list is checked on the URL's text before anything is connected or looked up, so a refused
/// host costs no DNS query.
package struct HostAllowList: Sendable, Equatable {
    /// The entries as written (lowercased), for messages.
    package let entries: [String]
    /// Whose list it is, named in a refusal ("basd's allowedHosts setting"); nil for the app's own
    /// pre-launch list (`BADownloadDomainAllowList`), or any list whose owner needs no naming.
    package let owner: String?
    /// The entries as host patterns and ports.
    private let rules: [Rule]

    /// One entry: a host (or `*.` pattern) and the one port it allows, if it names one.
    struct Rule: Sendable, Equatable {
        var host: String
        var port: Int?

        /// `entry` split into host and port: `[IPv6]:port`, `[IPv6]`, `host:port`; a bare IPv6
        /// address (more than one `:`) has no port.
        init(_ entry: String) {
            if entry.hasPrefix("["), let close = entry.firstIndex(of: "]") {
                host = String(entry[entry.index(after: entry.startIndex)..<close])
                let rest = entry[entry.index(after: close)...]
                port = rest.hasPrefix(":") ? ParsedURL.parsePort(ArraySlice(rest.dropFirst().utf8)) ?? -1 : nil
            } else if entry.filter({ $0 == ":" }).count == 1, let colon = entry.firstIndex(of: ":") {
                host = String(entry[..<colon])
                // A port that is not one (-1) allows nothing: basd's settings refuse such an entry.
                port = ParsedURL.parsePort(ArraySlice(entry[entry.index(after: colon)...].utf8)) ?? -1
            } else {
                host = entry
                port = nil
            }
        }

        func allows(host candidate: String, port candidatePort: Int?) -> Bool {
            if let port, port != candidatePort { return false }
            if host.hasPrefix("*.") {
                let suffix = host.dropFirst(1)  // ".example.com"
                return candidate.hasSuffix(suffix) && candidate.count > suffix.count
            }
            return candidate == host
        }
    }

    /// Whether an entry names a port.
    package var namesPorts: Bool { rules.contains { $0.port != nil } }

    /// A list of `entries` (lowercased) whose owner is not named in refusals.
    package init(_ entries: [String]) { self.init(entries, owner: nil) }

    /// A list of `entries` (lowercased), owned by `owner` ("basd's allowedHosts setting"), named in
    /// refusals.
    package init(_ entries: [String], owner: String?) {
        self.entries = entries.map { $0.lowercased() }
        self.owner = owner
        self.rules = self.entries.map(Rule.init)
    }

    /// Whether `host` (lowercased, no brackets) is allowed on any port: entries that name a port
    /// do not match (a domain list, Apple's `BADownloadDomainAllowList`, names none).
    package func allows(host: String) -> Bool { allows(host: host, port: nil) }

    /// Whether `host` (lowercased, no brackets) on `port` (the connection's: ``ParsedURL/effectivePort``;
    /// nil if unknown) is allowed.
    package func allows(host: String, port: Int?) -> Bool {
        let host = host.lowercased()
        return rules.contains { $0.allows(host: host, port: port) }
    }
}

/// The URL rules of every hop: https (or loopback http), and every allow-list there is.
package enum URLPolicy {
    /// nil when `url` may be fetched; else the reason. A URL must be allowed by every list in
    /// `allowLists` (basd's `allowedHosts` and an app's pre-launch list both apply); the reason names
    /// the first list that refuses it.
    package static func check(_ url: String, allowLists: [HostAllowList]) -> String? {
        if let violation = DownloadRules.checkURL(url) { return violation.reason }
        guard let parsed = ParsedURL(url) else { return nil }
        for list in allowLists where !list.allows(host: parsed.host, port: parsed.effectivePort) {
            let owner = list.owner.map { " of \($0)" } ?? ""
            // The port is named when the list names ports (else it plays no part).
            let port = list.namesPorts ? parsed.effectivePort.map { " port \($0)" } ?? "" : ""
            return
                "host '\(parsed.host)'\(port) is not in the allow-list\(owner) (\(list.entries.joined(separator: ", ")))"
        }
        return nil
    }
}
