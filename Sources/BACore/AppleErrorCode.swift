/// Apple's `BAErrorCode` raw values (domain `com.apple.backgroundassets.error`): the one table of
/// them, shared by the download rules, basd's replies and failures, and the extension host.
/// `BackgroundAssets`' public `BAError.Code` and `ba_extension.h`'s `BA_ERROR_*` constants are
/// checked against it by tests.
package enum AppleErrorCode: Int, Sendable, CaseIterable {
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

    /// `com.apple.backgroundassets.error`.
    package static let domain = "com.apple.backgroundassets.error"
}
