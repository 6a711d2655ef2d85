/// Why a transfer failed, with a message that says what the server (or the network) did.
///
/// Codes can grow without breaking callers; switch with a `default`.
public struct DownloadError: Error, Equatable, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The URL or a redirect hop is not https (or loopback http), or its host is not allowed.
        public static let notAllowed = Code(rawValue: "notAllowed")
        /// The server answered a status that will not change by retrying (404, 403, …).
        public static let serverStatus = Code(rawValue: "serverStatus")
        /// Sizes disagree: declared, sent and expected.
        public static let sizeMismatch = Code(rawValue: "sizeMismatch")
        /// The server declared a file larger than the download's byte limit (a pre-launch allowance).
        public static let allowanceDisallowed = Code(rawValue: "allowanceDisallowed")
        /// The server sent more bytes than the download's byte limit (a pre-launch allowance).
        public static let allowanceExceeded = Code(rawValue: "allowanceExceeded")
        /// The finished file's SHA-256 is not the expected one.
        public static let checksumMismatch = Code(rawValue: "checksumMismatch")
        /// Transient failures went on past the retry budget.
        public static let retriesExhausted = Code(rawValue: "retriesExhausted")
        /// Connecting or transferring failed (foreground transfers fail fast on these).
        public static let network = Code(rawValue: "network")
        /// TLS handshake or server trust failed.
        public static let tls = Code(rawValue: "tls")
        /// The server asked for credentials and none (or wrong ones) were given.
        public static let authentication = Code(rawValue: "authentication")
        /// More redirects than allowed, or a redirect without a usable Location.
        public static let redirect = Code(rawValue: "redirect")
        /// The server's answer breaks HTTP's rules for ranges (wrong Content-Range, …).
        public static let protocolViolation = Code(rawValue: "protocolViolation")
        /// Reading or writing local files failed.
        public static let fileSystem = Code(rawValue: "fileSystem")
        /// The file system is full (`ENOSPC`) or the user's quota is used up (`EDQUOT`): the
        /// partial file keeps what it has, and the owner may start the transfer again once there is room.
        public static let noSpace = Code(rawValue: "noSpace")
        /// The transfer was cancelled.
        public static let cancelled = Code(rawValue: "cancelled")
        public var description: String { rawValue }
    }

    public var code: Code
    /// What happened, for a person: "server answered 404 Not Found for https://…".
    public var message: String
    /// The HTTP status, when the server answered.
    public var httpStatus: Int?
    /// libcurl's result code, when the failure came from libcurl.
    public var curlCode: Int32?

    public init(_ code: Code, _ message: String, httpStatus: Int? = nil, curlCode: Int32? = nil) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.curlCode = curlCode
    }

    public var description: String { "\(code): \(message)" }
}
