internal import CCurl

extension DownloadRequest.Trust {
    /// Where libcurl finds the system's CA certificates when no `caFile` or `caDirectory` is set:
    /// the bundle file and folder it was built with (`CURLINFO_CAINFO`, `CURLINFO_CAPATH`), nil
    /// where it has none (a TLS backend that reads the system's store itself).
    package static func systemDefaults() -> (file: String?, directory: String?) {
        guard CurlGlobal.initialized, let easy = curl_easy_init() else { return (nil, nil) }
        defer { curl_easy_cleanup(easy) }
        func info(_ what: CURLINFO) -> String? {
            var value: UnsafeMutablePointer<CChar>?
            guard ccurl_getinfo_string(easy, what, &value) == CURLE_OK, let value else { return nil }
            let text = String(cString: value)
            return text.isEmpty ? nil : text
        }
        return (info(CURLINFO_CAINFO), info(CURLINFO_CAPATH))
    }

    /// How servers' certificates are checked, in words for basd's startup line:
    /// `caFile /etc/ba/ca.pem`, `caDirectory /etc/ba/certs`, or `the system's CAs (libcurl's
    /// /etc/ssl/certs/ca-certificates.crt, /etc/ssl/certs)`; `, pinned public key` when one is set.
    ///
    /// - Parameter system: libcurl's defaults (``systemDefaults()``), used when neither `caFile`
    ///   nor `caDirectory` is set.
    package func source(system: (file: String?, directory: String?)) -> String {
        var parts: [String] = []
        if let caFile { parts.append("caFile \(caFile)") }
        if let caDirectory { parts.append("caDirectory \(caDirectory)") }
        var text: String
        if parts.isEmpty {
            let places = [system.file, system.directory].compactMap { $0 }
            text =
                places.isEmpty
                ? "the system's CAs (the TLS library's own store)"
                : "the system's CAs (libcurl's \(places.joined(separator: ", ")))"
        } else {
            text = parts.joined(separator: " and ")
        }
        if pinnedPublicKey != nil { text += ", pinned public key" }
        return text
    }
}
