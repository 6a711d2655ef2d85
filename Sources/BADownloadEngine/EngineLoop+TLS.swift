import BACore
internal import CCrypto
internal import CCurl

extension EngineLoop {
    /// libcurl's error text for the transfer's last request (`CURLOPT_ERRORBUFFER`), or "".
    func curlErrorText(of transfer: Transfer) -> String {
        guard let buffer = errorBuffers[ObjectIdentifier(transfer)] else { return "" }
        return String(cString: buffer)
    }

    /// The error of a failed TLS handshake, with what kind of failure it is. A certificate for
    /// other names than the URL's host is told apart from an untrusted one: OpenSSL's verify
    /// result says only "unspecified certificate verification error (X.509 error 1)" for it, and
    /// the fix is not to trust another CA.
    func tlsError(of transfer: Transfer, result: CURLcode, url: String) -> DownloadError {
        let code = CurlCode(rawValue: result.rawValue)
        let text = curlErrorText(of: transfer)
        let curlCode = Int32(result.rawValue)
        if result == CURLE_SSL_PINNEDPUBKEYNOTMATCH {
            return DownloadError(.tls, "\(url): \(code)", curlCode: curlCode, tlsProblem: .pinnedKeyMismatch)
        }
        var verifyResult = 0
        if let easy = transfer.easy { _ = ccurl_getinfo_long(easy, CURLINFO_SSL_VERIFYRESULT, &verifyResult) }
        // libcurl's own host check: "no alternative certificate subject name matches target host
        // name 'H'" or "certificate subject name 'X' does not match target host name 'H'".
        // X509_V_ERR_HOSTNAME_MISMATCH (62) and X509_V_ERR_IP_ADDRESS_MISMATCH (64): OpenSSL's.
        if text.contains("target host name") || verifyResult == 62 || verifyResult == 64 {
            let host = ParsedURL(url)?.host ?? url
            let detail = text.isEmpty ? "\(code)" : text
            return DownloadError(
                .tls, "\(url): the server's certificate is for other names than \(host) (\(detail))",
                curlCode: curlCode, tlsProblem: .hostnameMismatch)
        }
        if result == CURLE_PEER_FAILED_VERIFICATION {
            return DownloadError(
                .tls, "\(url): \(code)\(tlsCause(of: transfer))", curlCode: curlCode, tlsProblem: .untrusted)
        }
        let detail = text.isEmpty ? "" : " (\(text))"
        return DownloadError(.tls, "\(url): \(code)\(detail)", curlCode: curlCode, tlsProblem: .handshake)
    }

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
