import BACore
import BackgroundAssets
import Testing

/// `BAError.Code` (Apple's public enum) and the core's one table of Apple's codes hold the same
/// cases with the same raw values.
@Suite("BAError.Code and the error-code table")
struct ErrorCodeTableTests {
    @Test("every table code is a BAError.Code with the same raw value, and the reverse")
    func sameCodes() {
        #expect(Set(BAError.Code.allCases.map(\.rawValue)) == Set(AppleErrorCode.allCases.map(\.rawValue)))
        for code in AppleErrorCode.allCases {
            #expect("\(BAError.Code(rawValue: code.rawValue).map { "\($0)" } ?? "-")" == "\(code)")
        }
        #expect(BAErrorDomain == AppleErrorCode.domain)
    }
}
