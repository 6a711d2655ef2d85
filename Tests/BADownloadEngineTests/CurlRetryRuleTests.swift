import Testing

@testable import BADownloadEngine

/// Which of libcurl's results the engine retries (docs/operations.md, "TLS and proxies"): TLS
/// failures never (the download fails at once with -1200), a connection that could not be made
/// waits for the network, a connection that broke off is retried with the backoff.
@Suite struct CurlRetryRuleTests {
    enum Rule: Equatable { case failsAtOnceAsTLS, waitsForTheNetwork, retriedWithBackoff, failsAtOnce }

    static func rule(_ raw: UInt32) -> Rule {
        let code = CurlCode(rawValue: raw)
        // The order of EngineLoop.outcome(of:result:): TLS first, then transient.
        if code.isTLS { return .failsAtOnceAsTLS }
        if code.isTransient { return code.isConnectivity ? .waitsForTheNetwork : .retriedWithBackoff }
        return .failsAtOnce
    }

    @Test(
        "libcurl's results and what the engine does with them",
        arguments: [
            (UInt32(35), Rule.failsAtOnceAsTLS),  // SSL_CONNECT_ERROR: a handshake that failed
            (58, .failsAtOnceAsTLS),  // SSL_CERTPROBLEM
            (59, .failsAtOnceAsTLS),  // SSL_CIPHER
            (60, .failsAtOnceAsTLS),  // PEER_FAILED_VERIFICATION: untrusted, or for other names
            (77, .failsAtOnceAsTLS),  // SSL_CACERT_BADFILE
            (83, .failsAtOnceAsTLS),  // SSL_ISSUER_ERROR
            (90, .failsAtOnceAsTLS),  // SSL_PINNEDPUBKEYNOTMATCH
            (6, .waitsForTheNetwork),  // COULDNT_RESOLVE_HOST
            (7, .waitsForTheNetwork),  // COULDNT_CONNECT: refused, no route
            (18, .retriedWithBackoff),  // PARTIAL_FILE
            (28, .retriedWithBackoff),  // OPERATION_TIMEDOUT
            (52, .retriedWithBackoff),  // GOT_NOTHING
            (55, .retriedWithBackoff),  // SEND_ERROR
            (56, .retriedWithBackoff),  // RECV_ERROR: a reset, also during a handshake
            (16, .retriedWithBackoff),  // HTTP2
            (92, .retriedWithBackoff),  // HTTP2_STREAM
            (1, .failsAtOnce),  // UNSUPPORTED_PROTOCOL
            (3, .failsAtOnce),  // URL_MALFORMAT
        ])
    func rules(code: UInt32, rule: Rule) {
        #expect(Self.rule(code) == rule, "CURLcode \(code) (\(CurlCode(rawValue: code)))")
    }
}
