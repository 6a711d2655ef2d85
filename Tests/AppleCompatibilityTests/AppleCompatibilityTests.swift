import BACore
import BATestSupport
import BackgroundAssetsTesting
import Foundation
import Testing

/// Apple-style code (AppleStyleApp.swift here, Tests/AppleCompatibilityExtension) compiles in both
/// language modes and behaves as on Apple's system. This target builds in Swift 5 mode; the test
/// below type-checks the same files in Swift 6 mode (and 5 again) with warnings as errors.
@Suite struct AppleCompatibilityTests {
    static let request = URLRequest(url: URL(string: "https://cdn.example.com/level-1.pak")!)
    static let group = "group.com.example.applestyle"

    // MARK: - Both language modes, no warning

    @Test(
        "the Apple-style extension and app type-check in Swift 5 and Swift 6 modes with warnings as errors",
        arguments: ["5", "6"])
    func compilesInBothLanguageModes(mode: String) async throws {
        let build = BuildProducts.directory.path
        let files = [
            BuildProducts.source("Tests/AppleCompatibilityExtension/AppleStyleDownloader.swift"),
            BuildProducts.source("Tests/AppleCompatibilityTests/AppleStyleApp.swift"),
            BuildProducts.source("Tests/AppleCompatibilityTests/AppleStylePacks.swift"),
            BuildProducts.source("Tests/AppleCompatibilityTests/AppleStyleLocalizedPacks.swift"),
            BuildProducts.source("Tests/AppleCompatibilityTests/AppleStyleSelfHostedPacks.swift"),
            // Apple's ManagedDownloaderExtension snippet, with `import ExtensionFoundation`.
            BuildProducts.source("Tests/AppleCompatibilityManagedExtension/DownloaderExtension.swift"),
        ]
        for file in files {
            let output = try await runProcess(
                "/usr/bin/env",
                [
                    "swiftc", "-typecheck", "-parse-as-library", "-swift-version", mode, "-warnings-as-errors",
                    "-I", build + "/Modules",
                    "-Xcc",
                    "-fmodule-map-file=" + BuildProducts.source("Sources/CBAExtension/include/module.modulemap"),
                    "-Xcc", "-fmodule-map-file=" + BuildProducts.systemModuleMap,
                    file,
                ])
            #expect(output.status == 0, "Swift \(mode), \(file):\n\(output.stderr)")
        }
    }

    /// `swiftc` with this build's modules, libBackgroundAssets.so and libos.so, as an extension author
    /// outside SwiftPM builds (docs/writing-an-extension-swift.md).
    static func swiftc(_ arguments: [String]) async throws -> ProcessOutput {
        let build = BuildProducts.directory.path
        return try await runProcess(
            "/usr/bin/env",
            ["swiftc", "-parse-as-library", "-swift-version", "6"] + arguments + [
                "-I", build + "/Modules",
                "-Xcc", "-fmodule-map-file=" + BuildProducts.source("Sources/CBAExtension/include/module.modulemap"),
                "-Xcc", "-fmodule-map-file=" + BuildProducts.systemModuleMap,
                "-L", build, "-lBackgroundAssets", "-los", "-Xlinker", "-rpath", "-Xlinker", build,
            ])
    }

    @Test("built as a program, the @main extension says it is an extension and exits with status 64")
    func mainRunAsAProgram() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let program = directory.path + "/apple-style"
        let build = try await Self.swiftc([
            "-emit-executable", "-o", program,
            BuildProducts.source("Tests/AppleCompatibilityExtension/AppleStyleDownloader.swift"),
        ])
        try #require(build.status == 0, "\(build.stderr)")
        let run = try await runProcess(program, [])
        #expect(run.status == 64)
        #expect(run.stderr.contains("AppleStyleDownloader is a Background Assets extension"), "\(run.stderr)")
    }

    @Test("an explicit ba_extension_descriptor export wins over @main (swiftc -emit-library, shared library)")
    func explicitExportWinsOverMain() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let source = try String(
            contentsOfFile: BuildProducts.source("Tests/AppleCompatibilityExtension/AppleStyleDownloader.swift"),
            encoding: .utf8)
        let file = try directory.write(
            "Explicit.swift",
            source + """

                @_cdecl("ba_extension_descriptor")
                public func baExtensionDescriptor() -> UnsafeRawPointer {
                    BAExportExtension(AppleStyleDownloader.self, name: "Explicit", version: "2.0.0")
                }

                """)
        let library = directory.path + "/libExplicit.so"
        let build = try await Self.swiftc(["-emit-library", "-o", library, file])
        try #require(build.status == 0, "\(build.stderr)")
        let tester = try BAExtensionTester(
            libraryPath: library, runnerPath: BuildProducts.executable("ba-extension-runner"))
        let run = try await tester.downloads(for: .periodic, manifest: Data("[]".utf8))
        #expect(run.verdict == .ok)
        #expect(
            run.identity?.name == "Explicit" && run.identity?.version == "2.0.0", "\(String(describing: run.identity))")
    }

    // MARK: - The @main extension under the host

    @Test(
        "the @main extension runs under the host: essential downloads on install, none on periodic or language change"
    )
    func mainExtensionReturnsEssentialDownloads() async throws {
        let tester = try BAExtensionTester(
            libraryPath: BuildProducts.library("AppleCompatibilityExtension"),
            runnerPath: BuildProducts.executable("ba-extension-runner"))
        let manifest = Data(
            #"""
            [{"identifier": "catalog", "url": "https://cdn.example.com/catalog.json", "size": 12, "essential": true},
             {"identifier": "level-9", "url": "https://cdn.example.com/level-9.pak", "size": 90, "essential": false}]
            """#.utf8)
        let install = try await tester.downloads(for: .install, manifest: manifest)
        #expect(install.verdict == .ok)
        #expect(install.identity?.name == "AppleStyleDownloader")
        #expect(install.urlDownloads.map(\.identifier) == ["catalog", "level-9"])
        #expect(install.urlDownloads.map(\.isEssential) == [true, false])
        #expect(install.urlDownloads.first?.priority == .max)
        let periodic = try await tester.downloads(for: .periodic, manifest: manifest)
        #expect(periodic.verdict == .ok)
        #expect(periodic.urlDownloads.map(\.isEssential) == [false, false])
        let languageChange = try await tester.downloads(for: .languageChange, manifest: manifest)
        #expect(languageChange.verdict == .ok)
        #expect(languageChange.urlDownloads.map(\.isEssential) == [false, false])
    }

    @Test("a failed essential download is re-queued as a non-essential copy with the same identifier")
    func failedEssentialIsRequeued() async throws {
        let tester = try BAExtensionTester(
            libraryPath: BuildProducts.library("AppleCompatibilityExtension"),
            runnerPath: BuildProducts.executable("ba-extension-runner"))
        let essential = BAURLDownload(
            identifier: "catalog", request: Self.request, essential: true, fileSize: 12,
            applicationGroupIdentifier: Self.group)
        let run = try await tester.failed(essential, error: BAError(.downloadFailedToStart, reason: "404"))
        #expect(run.verdict == .ok)
        #expect(run.scheduled.map(\.identifier) == ["catalog"])
        #expect(run.scheduled.map(\.isEssential) == [false])
        let background = BAURLDownload(
            identifier: "level-9", request: Self.request, essential: false, fileSize: 1,
            applicationGroupIdentifier: Self.group)
        let notEssential = try await tester.failed(background, error: BAError(.downloadFailedToStart, reason: "404"))
        #expect(notEssential.scheduled.isEmpty)
    }

    @Test("a finished file is moved into the app group under exclusive control before the call ends")
    func finishedFileIsMovedByTheAsynchronousHandler() async throws {
        let supervisor = try BAExtensionSupervisor(runnerPath: BuildProducts.executable("ba-extension-runner"))
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // Laid out as basd's: the container of a group is …/groups/<group>, the file delivered in it.
        let container = directory.path + "/groups/" + Self.group
        try FileManager.default.createDirectory(atPath: container, withIntermediateDirectories: true)
        let file = container + "/delivered-catalog"
        try Data("catalog bytes".utf8).write(to: URL(fileURLWithPath: file))
        let download = BAURLDownload(
            identifier: "catalog", request: Self.request, essential: false, fileSize: 13,
            applicationGroupIdentifier: Self.group)
        var invocation = BAExtensionInvocation(
            libraryPath: BuildProducts.library("AppleCompatibilityExtension"),
            event: .finished(download.record, filePath: file))
        invocation.appGroupContainerPath = container
        let run = try await supervisor.run(invocation)
        #expect(run.verdict == .ok)
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(
            (try? String(contentsOfFile: container + "/catalog", encoding: .utf8)) == "catalog bytes",
            "moved by the asynchronous handler before the call ended")

        // A second version replaces the first.
        try Data("catalog v2".utf8).write(to: URL(fileURLWithPath: file))
        let again = try await supervisor.run(invocation)
        #expect(again.verdict == .ok)
        #expect(again.logs.isEmpty, "\(again.logs) \(again.output)")
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect((try? String(contentsOfFile: container + "/catalog", encoding: .utf8)) == "catalog v2")
    }

    // MARK: - App-side semantics

    @Test("the closure forms are asynchronous: the method returns before the handler runs")
    func closureFormsAreAsynchronous() async throws {
        let manager: DownloadManaging = BADownloadManager.shared
        let returned = DispatchSemaphore(value: 0)
        let outcome: (sawReturn: Bool, acquired: Bool) = await withCheckedContinuation { continuation in
            manager.withExclusiveControl(beforeDate: Date()) { acquired, _ in
                // A synchronous handler would run before the signal below and time out here.
                let sawReturn = returned.wait(timeout: .now() + 10) == .success
                continuation.resume(returning: (sawReturn, acquired))
            }
            returned.signal()
        }
        #expect(outcome.sawReturn)
        #expect(!outcome.acquired, "no basd in a test process")

        let fetchReturned = DispatchSemaphore(value: 0)
        let fetched: Bool = await withCheckedContinuation { continuation in
            manager.fetchCurrentDownloads { _, error in
                let sawReturn = fetchReturned.wait(timeout: .now() + 10) == .success
                continuation.resume(returning: sawReturn && (error as? BAError)?.code == .callerConnectionNotAccepted)
            }
            fetchReturned.signal()
        }
        #expect(fetched)
    }

    @Test("the async exclusive-control form reports basd being unreachable as BAError 55")
    func asyncFormThrows() async {
        await #expect(throws: BAError.self) {
            _ = try await readCatalogAsyncForm(container: URL(fileURLWithPath: "/nonexistent"))
        }
    }

    @Test("a delegate's completion-handler challenge method is what the manager's async call reaches")
    func completionHandlerChallengeFormIsCalled() async {
        let provider = CredentialProvider()
        let challenge = URLAuthenticationChallenge(
            protectionSpace: URLProtectionSpace(
                host: "cdn.example.com", port: 443, protocol: "https", realm: "assets",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic),
            proposedCredential: nil, previousFailureCount: 0, failureResponse: nil, error: nil,
            sender: NoSender())
        let download = BAURLDownload(
            identifier: "a", request: Self.request, fileSize: 1, applicationGroupIdentifier: Self.group)
        let delegate: BADownloadManagerDelegate = provider
        let answer = await delegate.download(download, didReceive: challenge)
        #expect(answer.0 == .useCredential)
        #expect(answer.1?.user == "user")
        #expect(provider.challenges == 1)
    }

    @Test("a non-final delegate class and its subclass are delegates (not Sendable, held weakly)")
    func nonFinalDelegate() {
        let observer = LoggingObserver()
        #expect(BADownloadManager.shared.delegate === observer)
        let download = BAURLDownload(
            identifier: "a", request: Self.request, fileSize: 1, applicationGroupIdentifier: Self.group)
        observer.download(download, finishedWithFileURL: URL(fileURLWithPath: "/tmp/a"))
        #expect(observer.lines == ["finished a"] && observer.finishedIdentifiers == ["a"])
        BADownloadManager.shared.delegate = nil
    }

    @Test("removingEssential() keeps the unique identifier, state and priority; only the necessity changes")
    func removingEssentialIsACopy() {
        let essential = BAURLDownload(
            identifier: "e", request: Self.request, essential: true, fileSize: 10,
            applicationGroupIdentifier: Self.group, priority: .max)
        let background = essential.removingEssential()
        #expect(!background.isEssential)
        #expect(background.uniqueIdentifier == essential.uniqueIdentifier)
        #expect(background.state == essential.state && background.priority == .max)
        #expect(background.identifier == "e" && background.fileSize == 10)
    }

    // MARK: - NSSecureCoding

    @Test("BAURLDownload survives an NSKeyedArchiver round trip with secure coding")
    func urlDownloadRoundTrip() throws {
        var request = Self.request
        request.setValue("Bearer x", forHTTPHeaderField: "Authorization")
        let download = BAURLDownload(
            identifier: "level-1", request: request, essential: true, fileSize: 1_048_576,
            applicationGroupIdentifier: Self.group, priority: .max)
        #expect(BAURLDownload.supportsSecureCoding && BADownload.supportsSecureCoding)
        let data = try NSKeyedArchiver.archivedData(withRootObject: download, requiringSecureCoding: true)
        let decoded = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: BAURLDownload.self, from: data))
        #expect(decoded == download, "same unique identifier")
        #expect(decoded.identifier == "level-1" && decoded.isEssential && decoded.fileSize == 1_048_576)
        #expect(decoded.priority == .max && decoded.state == .created)
        #expect(decoded.applicationGroupIdentifier == Self.group)
        #expect(decoded.request.url == request.url)
        #expect(decoded.request.value(forHTTPHeaderField: "Authorization") == "Bearer x")
    }

    @Test("BAAppExtensionInfo survives an NSKeyedArchiver round trip, nil allowances included")
    func extensionInfoRoundTrip() throws {
        for info in [
            BAAppExtensionInfo(restrictedDownloadSizeRemaining: 100, restrictedEssentialDownloadSizeRemaining: 7),
            BAAppExtensionInfo(restrictedDownloadSizeRemaining: nil, restrictedEssentialDownloadSizeRemaining: nil),
        ] {
            let data = try NSKeyedArchiver.archivedData(withRootObject: info, requiringSecureCoding: true)
            let decoded = try #require(
                try NSKeyedUnarchiver.unarchivedObject(ofClass: BAAppExtensionInfo.self, from: data))
            #expect(decoded.restrictedDownloadSizeRemaining == info.restrictedDownloadSizeRemaining)
            #expect(decoded.restrictedEssentialDownloadSizeRemaining == info.restrictedEssentialDownloadSizeRemaining)
        }
    }

    // MARK: - Symbols and values

    @Test("Apple's newer symbols: languageChange 4, downloadDoesNotExist 113, print(error) in NSError form")
    func newerSymbols() {
        #expect(BAContentRequest.languageChange.rawValue == 4)
        #expect(BAErrorCode.downloadDoesNotExist.rawValue == 113)
        let error = BAError(.downloadAlreadyScheduled, reason: "already scheduled")
        #expect(
            "\(error)" == #"Error Domain=com.apple.backgroundassets.error Code=100 "already scheduled""#)
        #expect((error as NSError).domain == BAErrorDomain && (error as NSError).code == 100)
    }
}

/// A challenge sender that does nothing (the delegate answers through its handler).
final class NoSender: NSObject, URLAuthenticationChallengeSender {
    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) {}
    func continueWithoutCredential(for challenge: URLAuthenticationChallenge) {}
    func cancel(_ challenge: URLAuthenticationChallenge) {}
    func performDefaultHandling(for challenge: URLAuthenticationChallenge) {}
    func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) {}
}
