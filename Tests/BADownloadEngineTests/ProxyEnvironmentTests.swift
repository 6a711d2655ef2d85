import Testing

@testable import BADownloadEngine

/// Which proxy libcurl takes for a URL, by its rules (so that a proxy's failure can name it).
@Suite struct ProxyEnvironmentTests {
    typealias Proxy = ProxyEnvironment.Proxy

    @Test(
        arguments: [
            // (environment, URL, expected proxy and variable)
            ([:], "https://cdn.example.com/a", nil),
            (
                ["https_proxy": "http://p:3128"], "https://cdn.example.com/a",
                Proxy(proxy: "http://p:3128", variable: "https_proxy")
            ),
            (
                ["HTTPS_PROXY": "http://p:3128"], "https://cdn.example.com/a",
                Proxy(proxy: "http://p:3128", variable: "HTTPS_PROXY")
            ),
            (["https_proxy": "http://p:3128"], "http://127.0.0.1/a", nil),
            // http takes the lowercase variable only (libcurl's rule against CGI's HTTP_PROXY).
            (["HTTP_PROXY": "http://p:3128"], "http://127.0.0.1/a", nil),
            (
                ["http_proxy": "http://p:3128"], "http://127.0.0.1/a",
                Proxy(proxy: "http://p:3128", variable: "http_proxy")
            ),
            (
                ["all_proxy": "socks5://s:1080"], "https://cdn.example.com/a",
                Proxy(proxy: "socks5://s:1080", variable: "all_proxy")
            ),
            (
                ["https_proxy": "", "ALL_PROXY": "http://a:1"], "https://x.org/",
                Proxy(proxy: "http://a:1", variable: "ALL_PROXY")
            ),
            (["https_proxy": "http://p:3128", "no_proxy": "*"], "https://cdn.example.com/a", nil),
            (["https_proxy": "http://p:3128", "no_proxy": "example.com"], "https://cdn.example.com/a", nil),
            (["https_proxy": "http://p:3128", "NO_PROXY": ".example.com, other"], "https://example.com/a", nil),
            (
                ["https_proxy": "http://p:3128", "no_proxy": "ample.com"], "https://cdn.example.com/a",
                Proxy(proxy: "http://p:3128", variable: "https_proxy")
            ),
            (["https_proxy": "http://p:3128", "no_proxy": "::1"], "https://[::1]:8443/a", nil),
            (
                ["https_proxy": "http://user:secret@p:3128/"], "https://cdn.example.com/a",
                Proxy(proxy: "http://p:3128/", variable: "https_proxy")
            ),
        ] as [([String: String], String, Proxy?)])
    func proxyForURL(environment: [String: String], url: String, expected: Proxy?) {
        #expect(ProxyEnvironment(environment).proxy(for: url) == expected)
    }
}
