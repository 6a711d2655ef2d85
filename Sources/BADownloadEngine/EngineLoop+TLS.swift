internal import CCrypto
internal import CCurl

extension EngineLoop {
    /// Why the server's certificate was not trusted, from OpenSSL's verify result
    /// (`CURLINFO_SSL_VERIFYRESULT`): `": unable to get local issuer certificate (X.509 error 20)"`,
    /// or "" when the handshake failed for another reason (a pinned key, a protocol error).
    func tlsCause(of transfer: Transfer) -> String {
        guard let easy = transfer.easy else { return "" }
        var result = 0
        guard ccurl_getinfo_long(easy, CURLINFO_SSL_VERIFYRESULT, &result) == CURLE_OK, result != 0,
            let text = X509_verify_cert_error_string(result)
        else { return "" }
        return ": \(String(cString: text)) (X.509 error \(result))"
    }
}
