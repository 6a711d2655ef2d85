import BACore
import BAExclusiveControl
import BAExtensionHost
import BATestSupport
import BackgroundAssets
import BackgroundAssetsTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The host-API table (libffi closures) as a C extension sees it, and the other entry points.
@Suite struct HostAPITests {
    let supervisor: BAExtensionSupervisor

    init() throws {
        supervisor = try BAExtensionSupervisor(runnerPath: BuildProducts.executable("ba-extension-runner"))
    }

    func messages(_ result: BAExtensionRunResult) -> [String] { result.logs.map(\.message) }

    @Test func hostFunctionsDuringDownloadsForRequest() async throws {
        let container = try TemporaryDirectory()
        defer { container.remove() }
        var invocation = BAExtensionInvocation.contentRequest(
            .install, libraryPath: BuildProducts.library("BATestHostAPI"), manifestPath: "/dev/null")
        invocation.appGroupContainerPath = container.path
        invocation.currentDownloads = [
            DownloadDescription(
                identifier: "queued-1", uniqueIdentifier: "u1", url: "https://example.com/1", state: .waiting),
            DownloadDescription(
                identifier: "running-2", uniqueIdentifier: "u2", url: "https://example.com/2", state: .downloading),
        ]
        let result = try await supervisor.run(invocation)
        #expect(result.verdict == .ok)
        let log = messages(result)
        // Scheduling while downloads(for:) runs is refused with 50 and a reason.
        #expect(
            log.contains {
                $0.hasPrefix("schedule-during-request:") && $0.contains("code=50") && $0.contains("return the download")
            }, "\(log)")
        #expect(log.contains("current: queued-1 state=1"))
        #expect(log.contains("current: running-2 state=2"))
        #expect(log.contains { $0.hasPrefix("lock: acquire=0 release=0") }, "\(log)")
        #expect(result.downloads.map(\.identifier) == ["from-host-api"])
        #expect(result.scheduled.isEmpty)
        #expect(log.last == "done")
    }

    @Test func exclusiveControlHeldByAnotherProcessIsNotAcquired() async throws {
        let container = try TemporaryDirectory()
        defer { container.remove() }
        // This test process holds the app group's lock; the extension's try-once must fail.
        let lock = try ExclusiveControlLock(path: ExclusiveControlLock.path(inContainer: container.path))
        try lock.acquire(timeoutMilliseconds: 0)
        defer { try? lock.release() }
        var invocation = BAExtensionInvocation.contentRequest(
            .install, libraryPath: BuildProducts.library("BATestHostAPI"), manifestPath: "/dev/null")
        invocation.appGroupContainerPath = container.path
        let result = try await supervisor.run(invocation)
        #expect(messages(result).contains { $0.hasPrefix("lock: acquire=-1") }, "\(messages(result))")
    }

    @Test func scheduleAndCancelAfterFinishing() async throws {
        let download = DownloadDescription(
            identifier: "level-1", uniqueIdentifier: "u-1", url: "https://example.com/l1", fileSize: 3, state: .finished
        )
        let result = try await supervisor.run(
            BAExtensionInvocation(
                libraryPath: BuildProducts.library("BATestHostAPI"), event: .finished(download, filePath: "/tmp/l1")))
        #expect(result.verdict == .ok)
        #expect(result.scheduled.map(\.identifier) == ["follow-up"])
        #expect(messages(result).contains { $0.hasPrefix("schedule-after-finish: status=0") })
        #expect(messages(result).contains { $0.hasPrefix("cancel-unknown:") && $0.contains("code=101") })
        #expect(messages(result).contains("finished level-1 /tmp/l1"))
    }

    @Test func failedGetsTheError() async throws {
        let download = DownloadDescription(
            identifier: "level-2", uniqueIdentifier: "u-2", url: "https://example.com/l2")
        let error = ErrorRecord(domain: "com.apple.backgroundassets.error", code: 102, message: "server said 503")
        let result = try await supervisor.run(
            BAExtensionInvocation(libraryPath: BuildProducts.library("BATestHostAPI"), event: .failed(download, error)))
        #expect(result.verdict == .ok)
        #expect(messages(result).contains("failed level-2 code=102 server said 503"))
    }

    @Test func challengeReturnsTheDispositionAndCredential() async throws {
        let download = DownloadDescription(identifier: "secret", uniqueIdentifier: "u-3", url: "https://example.com/s")
        let challenge = ChallengeRecord(
            host: "example.com", port: 443, protocolName: "https", realm: "assets",
            authenticationMethod: "NSURLAuthenticationMethodHTTPBasic",
            previousFailureCount: 0)
        for library in ["BATestHostAPI", "SampleSwiftExtension"] {
            let result = try await supervisor.run(
                BAExtensionInvocation(
                    libraryPath: BuildProducts.library(library), event: .challenge(download, challenge),
                    environment: ["BA_SAMPLE_USER": "user", "BA_SAMPLE_PASSWORD": "secret"]))
            #expect(result.verdict == .ok, "\(library): \(result.verdict) \(result.output)")
            #expect(result.challengeDisposition == 0, "\(library): useCredential")
            #expect(result.credential?.user == "user" && result.credential?.password == "secret", "\(library)")
        }
    }
}

/// BackgroundAssetsTesting, the helper for extension authors.
@Suite struct TesterTests {
    let manifest = Data(
        #"{"applicationGroupIdentifier": "group.t", "assets": [{"identifier": "b", "url": "https://e.com/b", "fileSize": 3, "essential": true}, {"identifier": "a", "url": "https://e.com/a"}]}"#
            .utf8)

    @Test func runsALibraryInARunner() async throws {
        let tester = try BAExtensionTester(
            libraryPath: BuildProducts.library("SampleSwiftExtension"),
            runnerPath: BuildProducts.executable("ba-extension-runner"))
        let run = try await tester.downloads(for: .install, manifest: manifest)
        #expect(run.verdict == .ok)
        #expect(run.urlDownloads.map(\.identifier) == ["a", "b"])
        #expect(run.urlDownloads.map(\.isEssential) == [false, true])
        #expect(run.urlDownloads.first?.applicationGroupIdentifier == "group.t")
        let periodic = try await tester.downloads(for: .periodic, manifest: manifest)
        #expect(periodic.urlDownloads.allSatisfy { !$0.isEssential })
    }

    struct TwoDownloads: BADownloaderExtension {
        func downloads(
            for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo
        ) -> Set<
            BADownload
        > {
            let request = URLRequest(url: URL(string: "https://cdn.example.com/x")!)
            // The manifest is a read-only copy (mode 0400; root could still write, so check the mode).
            let mode = (try? FileManager.default.attributesOfItem(atPath: manifestURL.path)[.posixPermissions]) as? Int
            return [
                BAURLDownload(
                    identifier: mode == 0o400 ? "good" : "mode-\(String(describing: mode))", request: request,
                    fileSize: 1, applicationGroupIdentifier: "g"),
                BAURLDownload(identifier: "../bad", request: request, fileSize: 1, applicationGroupIdentifier: "g"),
            ]
        }
    }

    @Test func callsATypeInProcessWithTheHostRules() throws {
        let result = try BAExtensionTester.downloads(of: TwoDownloads.self, for: .install, manifest: Data("{}".utf8))
        #expect(result.downloads.map(\.identifier) == ["good"])
        #expect(result.rejected.map(\.download.identifier) == ["../bad"])
    }
}

/// The same host table as a Swift extension sees it, through BADownloadManager.
@Suite struct SwiftManagerTests {
    let supervisor: BAExtensionSupervisor

    init() throws {
        supervisor = try BAExtensionSupervisor(runnerPath: BuildProducts.executable("ba-extension-runner"))
    }

    @Test func theManagerInsideDownloadsForRequest() async throws {
        let container = try TemporaryDirectory()
        defer { container.remove() }
        var invocation = BAExtensionInvocation.contentRequest(
            .install, libraryPath: BuildProducts.library("BATestSwiftManager"), manifestPath: "/dev/null",
            extensionInfo: BAAppExtensionInfo(
                restrictedDownloadSizeRemaining: 1000, restrictedEssentialDownloadSizeRemaining: nil))
        invocation.appGroupContainerPath = container.path
        invocation.currentDownloads = [
            DownloadDescription(identifier: "queued", uniqueIdentifier: "u", url: "https://e.com/q", state: .waiting)
        ]
        let result = try await supervisor.run(invocation)
        #expect(result.verdict == .ok, "\(result.verdict) \(result.output)")
        let log = result.logs.map(\.message)
        #expect(log.contains { $0.hasPrefix("schedule: 50 ") && $0.contains("return the download") }, "\(log)")
        #expect(log.contains { $0.hasPrefix("foreground: 50 ") }, "\(log)")
        #expect(log.contains("current: queued=1"))
        #expect(log.contains("remaining: 1000"))
        #expect(log.contains("lock: true nil"), "\(log)")
        #expect(result.downloads.map(\.identifier) == ["swift-scheduled"])
        #expect(result.scheduled.isEmpty)
    }

    @Test func theManagerAfterAFinishedDownload() async throws {
        let download = DownloadDescription(
            identifier: "done", uniqueIdentifier: "u-9", url: "https://e.com/d", isEssential: false, state: .finished)
        let result = try await supervisor.run(
            BAExtensionInvocation(
                libraryPath: BuildProducts.library("BATestSwiftManager"), event: .finished(download, filePath: "/tmp/d")
            ))
        #expect(result.verdict == .ok, "\(result.verdict) \(result.output)")
        let log = result.logs.map(\.message)
        #expect(log.contains("schedule-after-finish: ok"), "\(log)")
        #expect(log.contains { $0.hasPrefix("cancel-unknown: 101 ") }, "\(log)")
        #expect(log.contains("finished: done essential=false state=3"))
        #expect(log.contains { $0.hasPrefix("BADownloadManager.delegate is not used in an extension") }, "\(log)")
        #expect(result.scheduled.map(\.identifier) == ["swift-scheduled"])
    }

    @Test func containerURLInAnExtensionComesFromTheRunner() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let container = directory.path + "/groups/group.test"
        try FileManager.default.createDirectory(atPath: container, withIntermediateDirectories: true)
        let download = DownloadDescription(
            identifier: "done", uniqueIdentifier: "u-10", url: "https://e.com/d",
            applicationGroupIdentifier: "group.test", state: .finished)
        func run(container: String?, inherited: String? = nil) async throws -> [String] {
            let result = try await supervisor.run(
                BAExtensionInvocation(
                    libraryPath: BuildProducts.library("BATestSwiftManager"),
                    event: .finished(download, filePath: "/tmp/d"), appGroupContainerPath: container,
                    environment: inherited.map { ["BA_APP_GROUP_CONTAINER": $0] } ?? [:]))
            #expect(result.verdict == .ok, "\(result.verdict) \(result.output)")
            return result.logs.map(\.message)
        }
        let inside = try await run(container: container)
        #expect(inside.contains("container group.test: \(container)"), "\(inside)")
        #expect(inside.contains("container group.other: nil"), "\(inside)")
        // No container for the call: nil, even with a value inherited from the host's environment.
        let without = try await run(container: nil, inherited: container)
        #expect(without.contains("container group.test: nil"), "\(without)")
    }
}
