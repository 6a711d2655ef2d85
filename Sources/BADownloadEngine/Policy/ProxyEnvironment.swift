import BACore

/// The proxy libcurl takes for a URL from the environment, by libcurl's rules, so that a failure
/// of the proxy can name it instead of being blamed on the origin server.
///
/// libcurl 7.88 (Debian 12) cannot say whether a request went through a proxy
/// (`CURLINFO_USED_PROXY` is 8.7), so the engine works it out the same way libcurl does:
/// `no_proxy` / `NO_PROXY` first (`*`, or comma- or space-separated host names, a leading dot
/// ignored, matching the host and its subdomains, case-insensitively), then `http_proxy` for http
/// (lowercase only, as libcurl), `https_proxy` / `HTTPS_PROXY` for https, then `all_proxy` /
/// `ALL_PROXY`. An empty variable counts as unset. (libcurl also matches IP ranges in `no_proxy`;
/// this does not, which at worst names a proxy that was not used.)
package struct ProxyEnvironment: Sendable {
    /// A proxy and the variable that names it.
    package struct Proxy: Sendable, Equatable {
        /// The proxy as the variable gives it (credentials removed).
        package var proxy: String
        /// The environment variable it came from (`https_proxy`, …).
        package var variable: String
    }

    let environment: [String: String]

    /// Reads from `environment` (the process's, for the engine).
    package init(_ environment: [String: String]) {
        self.environment = environment
    }

    /// The proxy requests to `url` go through, or nil when they go direct.
    package func proxy(for url: String) -> Proxy? {
        guard let parsed = ParsedURL(url) else { return nil }
        if let list = value("no_proxy") ?? value("NO_PROXY"), Self.matches(host: parsed.host, noProxy: list) {
            return nil
        }
        var names = ["\(parsed.scheme)_proxy"]
        if parsed.scheme != "http" { names.append("\(parsed.scheme.uppercased())_PROXY") }
        names += ["all_proxy", "ALL_PROXY"]
        for name in names {
            if let proxy = value(name) { return Proxy(proxy: Self.withoutCredentials(proxy), variable: name) }
        }
        return nil
    }

    private func value(_ name: String) -> String? {
        guard let value = environment[name], !value.isEmpty else { return nil }
        return value
    }

    /// Whether `host` is listed in a `no_proxy` value.
    static func matches(host: String, noProxy: String) -> Bool {
        let entries = noProxy.split(whereSeparator: { $0 == "," || $0 == " " })
        for entry in entries {
            var name = entry.lowercased()
            if name == "*" { return true }
            while name.hasPrefix(".") { name.removeFirst() }
            if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
            guard !name.isEmpty else { continue }
            if host == name || host.hasSuffix("." + name) { return true }
        }
        return false
    }

    /// `scheme://user:password@host:port` without `user:password@`: an error message must not
    /// show the proxy's password.
    static func withoutCredentials(_ proxy: String) -> String {
        let start = proxy.range(of: "://")?.upperBound ?? proxy.startIndex
        let authorityEnd = proxy[start...].firstIndex(of: "/") ?? proxy.endIndex
        guard let at = proxy[start..<authorityEnd].lastIndex(of: "@") else { return proxy }
        return String(proxy[..<start]) + String(proxy[proxy.index(after: at)...])
    }
}
