import BackgroundAssets
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite struct APITests {
    let request = URLRequest(url: URL(string: "https://cdn.example.com/a.pak")!)

    @Test func rawValuesAreApples() {
        #expect(BADownload.State.failed.rawValue == -1)
        #expect(BADownload.State.created.rawValue == 0)
        #expect(BADownload.State.waiting.rawValue == 1)
        #expect(BADownload.State.downloading.rawValue == 2)
        #expect(BADownload.State.finished.rawValue == 3)
        #expect(BAContentRequest.install.rawValue == 1)
        #expect(BAContentRequest.update.rawValue == 2)
        #expect(BAContentRequest.periodic.rawValue == 3)
        #expect(BAContentRequest.languageChange.rawValue == 4)
        #expect(BAErrorDomain == "com.apple.backgroundassets.error")
        let codes: [BAErrorCode: Int] = [
            .downloadInvalid: 0, .callFromExtensionNotAllowed: 50, .callFromInactiveProcessNotAllowed: 51,
            .callerConnectionNotAccepted: 55, .callerConnectionInvalid: 56, .downloadAlreadyScheduled: 100,
            .downloadNotScheduled: 101, .downloadFailedToStart: 102, .downloadAlreadyFailed: 103,
            .downloadEssentialDownloadNotPermitted: 109, .downloadBackgroundActivityProhibited: 111,
            .downloadWouldExceedAllowance: 112, .downloadDoesNotExist: 113, .sessionDownloadDisallowedByDomain: 202,
            .sessionDownloadDisallowedByAllowance: 203, .sessionDownloadAllowanceExceeded: 204,
            .sessionDownloadNotPermittedBeforeAppLaunch: 206,
        ]
        #expect(codes.count == BAErrorCode.allCases.count)
        for (code, raw) in codes { #expect(code.rawValue == raw) }
        #expect(BADownload.Priority.min < .default && BADownload.Priority.default < .max)
        #expect(BADownload.Priority(7).rawValue == 7 && BADownload.Priority(rawValue: 7) == BADownload.Priority(7))
    }

    @Test func errorsBridgeToNSErrorWithAReason() {
        let error = BAError(.downloadNotScheduled, reason: "no download 'x'")
        let ns = error as NSError
        #expect(ns.domain == BAErrorDomain)
        #expect(ns.code == 101)
        #expect(ns.localizedDescription == "no download 'x'")
    }

    @Test func initializers() {
        let essential = BAURLDownload(
            identifier: "e", request: request, essential: true, fileSize: 10, applicationGroupIdentifier: "group.g",
            priority: .max)
        #expect(
            essential.isEssential && essential.fileSize == 10 && essential.priority == .max
                && essential.state == .created)
        #expect(essential.applicationGroupIdentifier == "group.g")
        let sized = BAURLDownload(identifier: "s", request: request, fileSize: 5, applicationGroupIdentifier: "group.g")
        #expect(!sized.isEssential && sized.fileSize == 5 && sized.priority == .default)
        let (legacy, legacyPriority) = (LegacyInitializers.self as any LegacyDownloads.Type).make(request)
        #expect(!legacy.isEssential && legacy.fileSize == 0)
        #expect(legacyPriority.priority == .min)
    }

    @Test func removingEssentialAndCopy() {
        let essential = BAURLDownload(
            identifier: "e", request: request, essential: true, fileSize: 10, applicationGroupIdentifier: "g")
        let background = essential.removingEssential()
        #expect(!background.isEssential)
        #expect(background.identifier == "e" && background.fileSize == 10 && background.request == essential.request)
        #expect(background.uniqueIdentifier == essential.uniqueIdentifier, "a copy with only the necessity changed")
        #expect(background.state == essential.state && background.priority == essential.priority)
        let copy = essential.copy() as? BAURLDownload
        #expect(copy == essential, "a copy keeps the unique identifier")
        #expect(Set<BADownload>([essential, copy!]).count == 1)
        #expect(
            essential.baVerifyingSHA256(String(repeating: "AB", count: 32)).baExpectedSHA256
                == String(repeating: "ab", count: 32))
    }

    @Test(arguments: [
        ("", "empty"), ("../x", "'..'"), ("a/b", "'/'"), ("bad\u{0}id", "NUL"), ("tab\tid", "control"),
    ])
    func invalidIdentifiersAreRefusedBeforeAnythingElse(identifier: String, why: String) {
        let download = BAURLDownload(
            identifier: identifier, request: request, fileSize: 1, applicationGroupIdentifier: "g")
        #expect {
            try BADownloadManager.shared.scheduleDownload(download)
        } throws: { error in
            guard let error = error as? BAError else { return false }
            return error.code == .downloadInvalid && error.reason.contains(why)
        }
    }

    @Test func urlRules() {
        func code(_ url: String, essential: Bool = false, size: Int = 1) -> BAErrorCode? {
            let download = BAURLDownload(
                identifier: "x", request: URLRequest(url: URL(string: url)!), essential: essential, fileSize: size,
                applicationGroupIdentifier: "g")
            do {
                try BADownloadManager.shared.scheduleDownload(download)
                return nil
            } catch let error as BAError {
                return error.code
            } catch {
                return nil
            }
        }
        #expect(code("http://cdn.example.com/a") == .downloadInvalid)
        #expect(code("ftp://cdn.example.com/a") == .downloadInvalid)
        #expect(code("https://cdn.example.com/a", essential: true, size: 0) == .downloadInvalid)
        // Valid downloads get past validation and then need a connection (none in a test process).
        #expect(code("https://cdn.example.com/a") == .callerConnectionNotAccepted)
        #expect(code("http://127.0.0.1:8080/a") == .callerConnectionNotAccepted)
        #expect(code("http://[::1]:8080/a") == .callerConnectionNotAccepted)
        #expect(code("http://localhost/a") == .callerConnectionNotAccepted)
    }

    @Test func exclusiveControlOutsideAnExtensionReportsTheError() async {
        let result = await withCheckedContinuation { continuation in
            BADownloadManager.shared.withExclusiveControl(beforeDate: Date()) { acquired, error in
                continuation.resume(returning: (acquired, (error as? BAError)?.code))
            }
        }
        #expect(result.0 == false)
        #expect(result.1 == .callerConnectionNotAccepted)
    }

    struct Legacy: BADownloaderExtension {
        func applicationDidInstall(metadata: BAAppExtensionInfo) -> Set<BADownload> {
            [
                BAURLDownload(
                    identifier: "installed", request: URLRequest(url: URL(string: "https://e.com/i")!), fileSize: 1,
                    applicationGroupIdentifier: "g")
            ]
        }
        func checkForUpdates(metadata: BAAppExtensionInfo) -> Set<BADownload> {
            [
                BAURLDownload(
                    identifier: "periodic", request: URLRequest(url: URL(string: "https://e.com/p")!), fileSize: 1,
                    applicationGroupIdentifier: "g")
            ]
        }
    }

    @Test func theCurrentEntryPointCallsThe2022Names() {
        let info = BAAppExtensionInfo(
            restrictedDownloadSizeRemaining: 10, restrictedEssentialDownloadSizeRemaining: nil)
        let url = URL(fileURLWithPath: "/dev/null")
        #expect(
            Legacy().downloads(for: .install, manifestURL: url, extensionInfo: info).map(\.identifier) == ["installed"])
        #expect(
            Legacy().downloads(for: .periodic, manifestURL: url, extensionInfo: info).map(\.identifier) == ["periodic"])
        #expect(Legacy().downloads(for: .update, manifestURL: url, extensionInfo: info).isEmpty)
    }
}

/// The 2022 initializers, still accepted (deprecated, as Apple deprecated them), called through a
/// protocol so the test builds without warnings.
protocol LegacyDownloads {
    static func make(_ request: URLRequest) -> (BAURLDownload, BAURLDownload)
}

enum LegacyInitializers: LegacyDownloads {
    @available(*, deprecated)
    static func make(_ request: URLRequest) -> (BAURLDownload, BAURLDownload) {
        (
            BAURLDownload(identifier: "l", request: request, applicationGroupIdentifier: "group.g"),
            BAURLDownload(identifier: "p", request: request, applicationGroupIdentifier: "group.g", priority: .min)
        )
    }
}
