import BADaemonProtocol
import BADownloadEngine
import BAExclusiveControl
import BAExtensionProtocol
import BAStore
import Foundation

/// A request refused: the error reply.
struct Refusal: Error {
    var code: Int
    var message: String

    init(_ code: Int, _ message: String) {
        self.code = code
        self.message = message
    }

    init(_ code: DaemonErrorCode, _ message: String) { self.init(code.rawValue, message) }

    var result: ServerMessage.Result { .error(code: code, message: message) }

    /// Apple's codes for the store's refusals; the rest is an internal error.
    init(_ error: BAStoreError) {
        switch error.code {
        case .duplicateIdentifier: self.init(ErrorCodes.downloadAlreadyScheduled, error.message)
        case .notScheduled, .unknownDownload: self.init(ErrorCodes.downloadNotScheduled, error.message)
        case .downloadEnded: self.init(ErrorCodes.downloadNotScheduled, error.message)
        case .unknownApp: self.init(DaemonErrorCode.callerConnectionNotAccepted, error.message)
        case .invalidArgument: self.init(ErrorCodes.downloadInvalid, error.message)
        default: self.init(DaemonErrorCode.internalError, "basd could not use its state: \(error)")
        }
    }
}

/// Apple's `BAErrorCode` raw values that basd replies with, from the one table (`AppleErrorCode`).
enum ErrorCodes {
    static let downloadInvalid = AppleErrorCode.downloadInvalid.rawValue
    static let callFromExtensionNotAllowed = AppleErrorCode.callFromExtensionNotAllowed.rawValue
    static let downloadAlreadyScheduled = AppleErrorCode.downloadAlreadyScheduled.rawValue
    static let downloadNotScheduled = AppleErrorCode.downloadNotScheduled.rawValue
    static let downloadEssentialDownloadNotPermitted = AppleErrorCode.downloadEssentialDownloadNotPermitted.rawValue
    static let downloadBackgroundActivityProhibited = AppleErrorCode.downloadBackgroundActivityProhibited.rawValue
    static let downloadWouldExceedAllowance = AppleErrorCode.downloadWouldExceedAllowance.rawValue
    static let sessionDownloadDisallowedByDomain = AppleErrorCode.sessionDownloadDisallowedByDomain.rawValue
}
