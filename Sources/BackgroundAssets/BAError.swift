import Foundation

/// The error domain of Background Assets errors.
public let BAErrorDomain = "com.apple.backgroundassets.error"

/// A Background Assets error: Apple's codes, with a human-readable reason.
///
/// Codes are Apple's raw values, so code written against Apple's framework can switch on them:
/// ```swift
/// do {
///     try BADownloadManager.shared.scheduleDownload(download)
/// } catch let error as BAError where error.code == .downloadAlreadyScheduled {
///     // already queued: nothing to do
/// }
/// ```
///
/// `print(error)` shows the `NSError` form, as on Apple's system:
/// `Error Domain=com.apple.backgroundassets.error Code=100 "…"`.
public struct BAError: CustomNSError, Hashable, Sendable, LocalizedError, CustomStringConvertible {
    /// Apple's `BAErrorCode` values.
    public enum Code: Int, Sendable, CaseIterable {
        case downloadInvalid = 0
        case callFromExtensionNotAllowed = 50
        case callFromInactiveProcessNotAllowed = 51
        case callerConnectionNotAccepted = 55
        case callerConnectionInvalid = 56
        case downloadAlreadyScheduled = 100
        case downloadNotScheduled = 101
        case downloadFailedToStart = 102
        case downloadAlreadyFailed = 103
        case downloadEssentialDownloadNotPermitted = 109
        case downloadBackgroundActivityProhibited = 111
        case downloadWouldExceedAllowance = 112
        case downloadDoesNotExist = 113
        case sessionDownloadDisallowedByDomain = 202
        case sessionDownloadDisallowedByAllowance = 203
        case sessionDownloadAllowanceExceeded = 204
        case sessionDownloadNotPermittedBeforeAppLaunch = 206
    }

    /// The error code.
    public let code: Code
    /// Why it happened and, where possible, how to fix it.
    public let reason: String

    /// Creates an error with a code and a human-readable reason.
    public init(_ code: Code, reason: String) {
        self.code = code
        self.reason = reason
    }

    public static var errorDomain: String { BAErrorDomain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] {
        [NSLocalizedDescriptionKey: reason, NSLocalizedFailureReasonErrorKey: reason]
    }
    public var errorDescription: String? { reason }
    public var failureReason: String? { reason }
    /// The `NSError` form: `Error Domain=com.apple.backgroundassets.error Code=100 "…"`.
    public var description: String { "Error Domain=\(BAErrorDomain) Code=\(code.rawValue) \"\(reason)\"" }

    public static let downloadInvalid = Code.downloadInvalid
    public static let callFromExtensionNotAllowed = Code.callFromExtensionNotAllowed
    public static let downloadAlreadyScheduled = Code.downloadAlreadyScheduled
    public static let downloadNotScheduled = Code.downloadNotScheduled
    public static let downloadEssentialDownloadNotPermitted = Code.downloadEssentialDownloadNotPermitted
}

/// Apple's name for the code type.
public typealias BAErrorCode = BAError.Code
