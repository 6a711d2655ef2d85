import BACore
import BAExtensionHost
import BATestSupport
import BackgroundAssets
import Foundation
import Testing

/// What an extension returns is validated, never trusted.
@Suite struct ValidationTests {
    let supervisor: BAExtensionSupervisor

    init() throws {
        supervisor = try BAExtensionSupervisor(runnerPath: BuildProducts.executable("ba-extension-runner"))
    }

    @Test func badIdentifiersAreRejectedWithAReason() async throws {
        let result = try await supervisor.run(
            .contentRequest(
                .install, libraryPath: BuildProducts.library("BATestBadIdentifiers"), manifestPath: "/dev/null"))
        #expect(result.verdict == .ok)
        #expect(result.downloads.map(\.identifier) == ["ok-1", "ok-2", "loopback-http"])
        let reasons = result.rejected.map(\.reason)
        #expect(result.rejected.count == 8, "\(reasons)")
        #expect(reasons.contains { $0.contains("'../escape'") && $0.contains("'..'") })
        #expect(reasons.contains { $0.contains("'a/b'") && $0.contains("contains '/'") })
        #expect(reasons.contains { $0.contains("identifier is empty") })
        #expect(reasons.contains { $0.contains("NUL") })
        #expect(reasons.contains { $0.contains("plain http") })
        #expect(reasons.contains { $0.contains("needs a fileSize greater than 0") })
        #expect(reasons.contains { $0.contains("fileSize -5") })
        #expect(
            result.rejected.contains { $0.code == 100 && $0.download.identifier == "ok-1" },
            "the duplicate is rejected with 100")
    }

    @Test func aFloodOfDownloadsIsBoundedAndRejectedAsAWhole() async throws {
        var invocation = BAExtensionInvocation.contentRequest(
            .install, libraryPath: BuildProducts.library("BATestFlood"), manifestPath: "/dev/null")
        invocation.maximumDownloads = 1000
        let result = try await supervisor.run(invocation)
        #expect(result.verdict == .ok)
        #expect(result.returnedCount == 100_000)
        #expect(result.downloads.isEmpty)
        #expect(result.rejected.count == 1000, "only the first 1000 crossed the process boundary")
        #expect(result.rejected.first?.reason.contains("at most 1000") == true)
        #expect(result.logs.contains { $0.message.contains("99000") }, "add_download refused the rest: \(result.logs)")
    }

    @Test func essentialDownloadsAreRefusedForPeriodicRequests() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // The samples drop `essential` themselves for periodic requests; a raw rule check:
        let essential = DownloadDescription(
            identifier: "e", url: "https://example.com/e", isEssential: true, fileSize: 10)
        #expect(DownloadRules.check(essential, contentRequest: 3)?.code == 109)
        #expect(DownloadRules.check(essential, contentRequest: 1) == nil)
        #expect(DownloadRules.check(essential, contentRequest: 2) == nil)
    }
}
