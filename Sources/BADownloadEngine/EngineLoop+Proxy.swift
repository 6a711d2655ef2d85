internal import CCurl
import Foundation

// Failures of a proxy, told apart from the origin server's (libcurl's codes say "Couldn't
// connect to server" and "Failure when receiving data from the peer" for both).
extension EngineLoop {
    /// The process's proxy variables, as libcurl reads them.
    static let proxies = ProxyEnvironment(ProcessInfo.processInfo.environment)

    /// "the proxy http://proxy:3128 (from $https_proxy)", or "a proxy".
    func proxyName(for url: String) -> String {
        guard let proxy = Self.proxies.proxy(for: url) else { return "a proxy" }
        return "the proxy \(proxy.proxy) (from $\(proxy.variable))"
    }

    /// The outcome of a request that failed at its proxy, or nil when the proxy (if any) is not
    /// the cause: a CONNECT the proxy refused (`CURLINFO_HTTP_CONNECTCODE`), a proxy whose name
    /// does not resolve, or one that cannot be connected to.
    func proxyOutcome(of transfer: Transfer, result: CURLcode, url: String) -> TransferStateMachine.Outcome? {
        var connectCode = 0
        if let easy = transfer.easy { _ = ccurl_getinfo_long(easy, CURLINFO_HTTP_CONNECTCODE, &connectCode) }
        let text = curlErrorText(of: transfer)
        let detail = text.isEmpty ? "\(CurlCode(rawValue: result.rawValue))" : text
        if connectCode == 407 { return .fatal(proxyAsksForCredentials(url: url)) }
        if connectCode >= 300 {
            // A 502/503/504 from the proxy is usually the origin being unreachable through it.
            return .retryable(
                reason:
                    "\(url): \(proxyName(for: url)) did not connect to the server: it answered \(connectCode) (\(detail))",
                retryAfter: nil, isConnectivity: false)
        }
        if result == CURLE_COULDNT_RESOLVE_PROXY {
            return .retryable(
                reason: "\(url): \(proxyName(for: url)) has a host name that does not resolve (\(detail))",
                retryAfter: nil, isConnectivity: true)
        }
        if result == CURLE_COULDNT_CONNECT, let proxy = Self.proxies.proxy(for: url) {
            return .retryable(
                reason:
                    "\(url): cannot connect to \(proxyName(for: url)): \(detail); check that the proxy runs, or unset "
                    + "\(proxy.variable) (no_proxy lists the hosts that go direct)",
                retryAfter: nil, isConnectivity: true)
        }
        return nil
    }

    /// A 407: the proxy wants credentials, which go in the proxy's URL, not in the download.
    func proxyAsksForCredentials(url: String) -> DownloadError {
        let variable = Self.proxies.proxy(for: url)?.variable ?? "https_proxy"
        return DownloadError(
            .authentication,
            "\(url): \(proxyName(for: url)) asks for credentials (407 Proxy Authentication Required); "
                + "give them in the proxy's URL (\(variable)=http://USER:PASSWORD@HOST:PORT), not to the download",
            httpStatus: 407)
    }
}
