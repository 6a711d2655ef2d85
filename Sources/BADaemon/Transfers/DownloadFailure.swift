import BACore
import BADownloadEngine
import BAStore

/// How an engine failure reaches the app: Apple's domain and codes where Apple has one
/// (`docs/downloads.md`), `NSURLErrorDomain` codes for transport failures. The one table of it.
enum DownloadFailure {
    static let backgroundAssetsDomain = AppleErrorCode.domain
    static let urlDomain = "NSURLErrorDomain"

    /// The domain and code an engine error code is reported with.
    static func code(for code: DownloadError.Code) -> (domain: String, code: Int) {
        switch code {
        case .notAllowed: (backgroundAssetsDomain, AppleErrorCode.sessionDownloadDisallowedByDomain.rawValue)
        case .sizeMismatch, .checksumMismatch: (backgroundAssetsDomain, AppleErrorCode.downloadInvalid.rawValue)
        case .allowanceDisallowed:
            (backgroundAssetsDomain, AppleErrorCode.sessionDownloadDisallowedByAllowance.rawValue)
        case .allowanceExceeded: (backgroundAssetsDomain, AppleErrorCode.sessionDownloadAllowanceExceeded.rawValue)
        case .serverStatus: (urlDomain, -1011)  // NSURLErrorBadServerResponse
        case .tls: (urlDomain, -1200)  // NSURLErrorSecureConnectionFailed
        case .authentication: (urlDomain, -1013)  // NSURLErrorUserAuthenticationRequired
        case .redirect: (urlDomain, -1007)  // NSURLErrorHTTPTooManyRedirects
        case .retriesExhausted: (urlDomain, -1001)  // NSURLErrorTimedOut
        case .fileSystem: (urlDomain, -3001)  // NSURLErrorCannotOpenFile
        case .noSpace: (urlDomain, -3003)  // NSURLErrorCannotWriteToFile
        case .cancelled: (urlDomain, -999)  // NSURLErrorCancelled
        default: (urlDomain, -1005)  // NSURLErrorNetworkConnectionLost
        }
    }

    /// The failure stored with the download (and sent in its `failed` event).
    static func stored(_ error: DownloadError) -> StoredDownload.Failure {
        let (domain, code) = code(for: error.code)
        return StoredDownload.Failure(domain: domain, code: code, message: message(error))
    }

    /// The engine's message, and for a TLS failure what fixes it (for a private CA: basd's setting).
    static func message(_ error: DownloadError) -> String {
        guard
            let hint = error.hint(
                trustingACA: "name it in basd's settings (caFile: a PEM file, or caDirectory; docs/operations.md)",
                pinnedKey: "basd's pinnedPublicKey setting")
        else { return error.message }
        return error.message + "; " + hint
    }
}
