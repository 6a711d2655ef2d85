import BACore
import CBAExtension
import Testing

/// The one table of Apple's error codes, against the C header extensions compile with.
@Suite("Apple's error codes")
struct AppleErrorCodeTests {
    @Test("ba_extension.h's BA_ERROR_* constants are the table's values")
    func headerMatchesTable() {
        let header: [(Int32, AppleErrorCode)] = [
            (BA_ERROR_DOWNLOAD_INVALID, .downloadInvalid),
            (BA_ERROR_CALL_FROM_EXTENSION_NOT_ALLOWED, .callFromExtensionNotAllowed),
            (BA_ERROR_DOWNLOAD_ALREADY_SCHEDULED, .downloadAlreadyScheduled),
            (BA_ERROR_DOWNLOAD_NOT_SCHEDULED, .downloadNotScheduled),
            (BA_ERROR_DOWNLOAD_ESSENTIAL_NOT_PERMITTED, .downloadEssentialDownloadNotPermitted),
        ]
        for (value, code) in header {
            #expect(Int(value) == code.rawValue, "\(code)")
        }
    }

    @Test("the table's raw values are Apple's and unique")
    func uniqueValues() {
        let values = AppleErrorCode.allCases.map(\.rawValue)
        #expect(Set(values).count == values.count)
        #expect(AppleErrorCode.domain == "com.apple.backgroundassets.error")
        #expect(AppleErrorCode.sessionDownloadNotPermittedBeforeAppLaunch.rawValue == 206)
    }

    @Test("download rules refuse with the table's codes")
    func rulesUseTheTable() {
        let violation = DownloadRules.checkIdentifier("a/b")
        #expect(violation?.code == AppleErrorCode.downloadInvalid.rawValue)
    }
}
