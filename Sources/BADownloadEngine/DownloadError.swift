/// Why a transfer failed, with a message that says what the server (or the network) did.
///
/// Codes can grow without breaking callers; switch with a `default`.
package struct DownloadError: Error, Equatable, Sendable, CustomStringConvertible {
    package struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        /// The URL or a redirect hop is not https (or loopback http), or its host is not allowed.
        package static let notAllowed = Code(rawValue: "notAllowed")
        /// The server answered a status that will not change by retrying (404, 403, …).
        package static let serverStatus = Code(rawValue: "serverStatus")
        /// Sizes disagree: declared, sent and expected.
        package static let sizeMismatch = Code(rawValue: "sizeMismatch")
        /// The server declared a file larger than the download's byte limit (a pre-launch allowance).
        package static let allowanceDisallowed = Code(rawValue: "allowanceDisallowed")
        /// The server sent more bytes than the download's byte limit (a pre-launch allowance).
        package static let allowanceExceeded = Code(rawValue: "allowanceExceeded")
        /// The finished file's SHA-256 is not the expected one.
        package static let checksumMismatch = Code(rawValue: "checksumMismatch")
        /// Transient failures went on past the retry budget.
        package static let retriesExhausted = Code(rawValue: "retriesExhausted")
        /// Connecting or transferring failed (foreground transfers fail fast on these).
        package static let network = Code(rawValue: "network")
        /// TLS handshake or server trust failed.
        package static let tls = Code(rawValue: "tls")
        /// The server asked for credentials and none (or wrong ones) were given.
        package static let authentication = Code(rawValue: "authentication")
        /// More redirects than allowed, or a redirect without a usable Location.
        package static let redirect = Code(rawValue: "redirect")
        /// The server's answer breaks HTTP's rules for ranges (wrong Content-Range, …).
        package static let protocolViolation = Code(rawValue: "protocolViolation")
        /// Reading or writing local files failed.
        package static let fileSystem = Code(rawValue: "fileSystem")
        /// The file system is full (`ENOSPC`) or the user's quota is used up (`EDQUOT`): the
        /// partial file keeps what it has, and the owner may start the transfer again once there is room.
        package static let noSpace = Code(rawValue: "noSpace")
        /// The transfer was cancelled.
        package static let cancelled = Code(rawValue: "cancelled")
        package var description: String { rawValue }
    }

    /// What kind of failure a ``Code/tls`` error is, so that each front end can name its own fix
    /// (basd a setting, `ba fetch` a flag): ``hint(trustingACA:pinnedKey:)``.
    package enum TLSProblem: String, Sendable, Equatable {
        /// The certificate chain is not trusted: an unknown or private CA, self-signed, expired.
        case untrusted
        /// The certificate is valid but names other hosts than the URL's: another CA does not help.
        case hostnameMismatch
        /// The server's public key is not the pinned one.
        case pinnedKeyMismatch
        /// The handshake failed for another reason (protocol version, cipher, a reset).
        case handshake
    }

    package var code: Code
    /// What happened, for a person: "server answered 404 Not Found for https://…".
    package var message: String
    /// The HTTP status, when the server answered.
    package var httpStatus: Int?
    /// libcurl's result code, when the failure came from libcurl.
    package var curlCode: Int32?

    /// For a ``Code/tls`` error: what kind of TLS failure it is.
    package var tlsProblem: TLSProblem?

    package init(
        _ code: Code, _ message: String, httpStatus: Int? = nil, curlCode: Int32? = nil,
        tlsProblem: TLSProblem? = nil
    ) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.curlCode = curlCode
        self.tlsProblem = tlsProblem
    }

    /// What fixes a TLS failure, in the words of the front end that reports it; nil when there is
    /// nothing to add.
    ///
    /// - Parameters:
    ///   - trustingACA: How to trust a private CA there ("pass --cacert FILE.pem").
    ///   - pinnedKey: What names the pinned key there ("--pinned-public-key").
    package func hint(trustingACA: String, pinnedKey: String) -> String? {
        switch tlsProblem {
        case .untrusted: "to trust a private CA, \(trustingACA)"
        case .hostnameMismatch:
            "fetch it by a host name the certificate names, or give the server a certificate for this host "
                + "(trusting another CA does not help)"
        case .pinnedKeyMismatch: "the server's public key is not the one \(pinnedKey) names"
        case .handshake, nil: nil
        }
    }

    package var description: String { "\(code): \(message)" }
}
