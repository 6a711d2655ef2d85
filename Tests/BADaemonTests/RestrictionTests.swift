import BAAssetServer
import BACore
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The Info.plist restrictions before the app's first launch, each with Apple's error code, and
/// gone once the app's process has connected to basd (design §3, issue 5).
@Suite("pre-launch restrictions", .timeLimit(.minutes(3)))
struct RestrictionTests {
    let ba = BuildProducts.executable("ba")
    static let app = SampleAppFixture.bundleIdentifier

    /// Runs `ba ARGS --json --socket …` and returns the report of an install or simulation.
    func report(_ daemon: DaemonProcess, _ arguments: [String]) async throws -> [String: Any] {
        let output = try await runProcess(ba, arguments + ["--json", "--no-wait", "--socket", daemon.socketPath])
        let first = output.stdout.split(separator: "\n").first.map(String.init) ?? ""
        guard let object = (try? JSONSerialization.jsonObject(with: Data(first.utf8))) as? [String: Any],
            let report = object["report"] as? [String: Any]
        else {
            throw HarnessError(
                "ba \(arguments): \(output.status) \(output.stdout)\(output.stderr)\n\(daemon.standardError)")
        }
        return report
    }

    func simulate(_ daemon: DaemonProcess, _ event: String) async throws -> [String: Any] {
        let output = try await runProcess(
            ba, ["simulate", event, "--app", Self.app, "--json", "--socket", daemon.socketPath])
        guard let object = (try? JSONSerialization.jsonObject(with: Data(output.stdout.utf8))) as? [String: Any],
            let report = object["report"] as? [String: Any]
        else { throw HarnessError("ba simulate \(event): \(output.status) \(output.stdout)\(output.stderr)") }
        return report
    }

    static func refused(_ report: [String: Any]) -> [String: (code: Int, reason: String)] {
        var result: [String: (code: Int, reason: String)] = [:]
        for entry in report["refused"] as? [[String: Any]] ?? [] {
            result[entry["identifier"] as? String ?? ""] = (
                entry["code"] as? Int ?? -1, entry["reason"] as? String ?? ""
            )
        }
        return result
    }

    static func scheduled(_ report: [String: Any]) -> [String] {
        (report["scheduled"] as? [[String: Any]] ?? []).compactMap {
            ($0["download"] as? [String: Any])?["identifier"] as? String
        }
    }

    @Test("BADownloadAllowance: 112 past it, what is left reported to the extension and by ba apps; none after launch")
    func downloadAllowance() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let small = SampleAppFixture.bytes(1000, seed: 3)
        let big = SampleAppFixture.bytes(50_000, seed: 4)
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(identifier: "small", path: "/small.bin", contents: small, essential: false),
                .init(identifier: "big", path: "/big.bin", contents: big, essential: false),
            ]
        ) { info in
            info["BAInitialDownloadRestrictions"] = ["BADownloadAllowance": 20_000]
        }
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await report(daemon, ["install", fixture.appDirectory])
        let manifestBytes = try #require(install["manifestBytes"] as? Int)
        #expect(Self.scheduled(install) == ["small"], "\(install)")
        let refusal = try #require(Self.refused(install)["big"], "\(install)")
        #expect(refusal.code == 112)
        #expect(refusal.reason.contains("BADownloadAllowance"), "\(refusal.reason)")
        // The extension was told what was left once the manifest was counted.
        let logs = install["logs"] as? [String] ?? []
        #expect(logs.contains { $0.contains("allowance left: \(20_000 - manifestBytes),") }, "\(logs)")
        var app = try await CLIQueries.app(daemon)
        #expect(app["launched"] as? Bool == false)
        #expect(app["downloadAllowanceRemaining"] as? Int == 20_000 - manifestBytes - small.count, "\(app)")

        try CLIQueries.launch(daemon, app: Self.app)
        let periodic = try await simulate(daemon, "periodic")
        #expect(Self.refused(periodic)["big"] == nil, "\(periodic)")
        #expect(Self.scheduled(periodic).contains("big"), "\(periodic)")
        #expect(
            (periodic["logs"] as? [String] ?? []).contains {
                $0.contains("allowance left: unrestricted, essential: unrestricted")
            })
        app = try await CLIQueries.app(daemon)
        #expect(app["launched"] as? Bool == true)
        #expect(app["downloadAllowanceRemaining"] == nil, "\(app)")
    }

    @Test("BAEssentialDownloadAllowance and BAMaxInstallSize: 112 before launch, not after")
    func essentialLimits() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(
                    identifier: "core", path: "/core.bin", contents: SampleAppFixture.bytes(4000, seed: 5),
                    essential: true),
                .init(
                    identifier: "extra", path: "/extra.bin", contents: SampleAppFixture.bytes(3000, seed: 6),
                    essential: false),
            ]
        ) { info in
            info["BAInitialDownloadRestrictions"] = ["BAEssentialDownloadAllowance": 1000]
            info["BAMaxInstallSize"] = 2000
        }
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await report(daemon, ["install", fixture.appDirectory])
        let refused = Self.refused(install)
        #expect(
            refused["core"]?.code == 112 && refused["core"]?.reason.contains("BAEssentialDownloadAllowance") == true,
            "\(install)")
        #expect(
            refused["extra"]?.code == 112 && refused["extra"]?.reason.contains("BAMaxInstallSize") == true, "\(install)"
        )
        #expect(Self.scheduled(install).isEmpty)

        try CLIQueries.launch(daemon, app: Self.app)
        let update = try await simulate(daemon, "update")
        #expect(Self.refused(update).isEmpty, "\(update)")
        #expect(Set(Self.scheduled(update)) == ["core", "extra"], "\(update)")
    }

    @Test("BAEssentialMaxInstallSize: 112 for the essential past it in one call (exit 20); not after launch")
    func essentialMaxInstallSize() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(
                    identifier: "core-1", path: "/core-1.bin", contents: SampleAppFixture.bytes(3000, seed: 10),
                    essential: true),
                .init(
                    identifier: "core-2", path: "/core-2.bin", contents: SampleAppFixture.bytes(3000, seed: 11),
                    essential: true),
            ]
        ) { info in
            // The essential allowance (50 MiB in the sample) is not what stops core-2.
            info["BAEssentialMaxInstallSize"] = 5000
        }
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let output = try await runProcess(
            ba, ["install", fixture.appDirectory, "--json", "--no-wait", "--socket", daemon.socketPath])
        #expect(output.status == 20, "an essential refused: \(output.stdout)\(output.stderr)")
        #expect(
            output.stderr.contains("\"core-2\" was refused") && output.stderr.contains("error 112"), "\(output.stderr)")
        let first = output.stdout.split(separator: "\n").first.map(String.init) ?? ""
        let object = (try? JSONSerialization.jsonObject(with: Data(first.utf8))) as? [String: Any]
        let install = try #require(object?["report"] as? [String: Any], "\(output.stdout)")
        #expect(Self.scheduled(install) == ["core-1"], "\(install)")
        let refusal = try #require(Self.refused(install)["core-2"], "\(install)")
        #expect(refusal.code == 112)
        #expect(refusal.reason.contains("BAEssentialMaxInstallSize"), "\(refusal.reason)")
        #expect(refusal.reason.contains("6000 bytes"), "the call's essential total: \(refusal.reason)")

        _ = try await InstallCommandTests().waitForDownloads(daemon, "core-1 to finish") {
            InstallCommandTests.state($0["core-1"]) == "finished"
        }
        try CLIQueries.launch(daemon, app: Self.app)
        let update = try await simulate(daemon, "update")
        #expect(Self.refused(update).isEmpty, "\(update)")
        #expect(Set(Self.scheduled(update)) == ["core-1", "core-2"], "\(update)")
    }

    @Test("BADownloadDomainAllowList: 202 for another host before launch, not after")
    func domainAllowList() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let port = try #require(URL(string: server.baseURL)?.port)
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(
                    identifier: "elsewhere", path: "/elsewhere.bin", contents: SampleAppFixture.bytes(100, seed: 7),
                    essential: false, url: "http://localhost:\(port)/elsewhere.bin"),
                .init(
                    identifier: "here", path: "/here.bin", contents: SampleAppFixture.bytes(100, seed: 8),
                    essential: false),
            ]
        ) { info in
            info["BAInitialDownloadRestrictions"] = ["BADownloadDomainAllowList": ["127.0.0.1"]]
        }
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await report(daemon, ["install", fixture.appDirectory])
        let refusal = try #require(Self.refused(install)["elsewhere"], "\(install)")
        #expect(refusal.code == 202)
        #expect(refusal.reason.contains("localhost") && refusal.reason.contains("BADownloadDomainAllowList"))
        #expect(Self.scheduled(install) == ["here"])

        try CLIQueries.launch(daemon, app: Self.app)
        let periodic = try await simulate(daemon, "periodic")
        #expect(Self.scheduled(periodic).contains("elsewhere"), "\(periodic)")
    }

    @Test("a server declaring more than the allowed size: 203 before launch; the same file downloads after")
    func serverDeclaresMore() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let contents = SampleAppFixture.bytes(8000, seed: 9)
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(identifier: "liar", path: "/liar.bin", contents: contents, essential: false, declaredSize: 1000)
            ]
        ) { info in
            info["BAInitialDownloadRestrictions"] = ["BADownloadAllowance": 100_000]
        }
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await report(daemon, ["install", fixture.appDirectory])
        #expect(Self.scheduled(install) == ["liar"], "\(install)")
        let tests = InstallCommandTests()
        let failed = try await tests.waitForDownloads(daemon, "liar to fail") {
            InstallCommandTests.state($0["liar"]) == "failed"
        }
        #expect(failed["liar"]?["errorCode"] as? Int == 203, "\(failed)")
        #expect((failed["liar"]?["errorMessage"] as? String)?.contains("8000") == true, "\(failed)")

        try CLIQueries.launch(daemon, app: Self.app)
        let periodic = try await simulate(daemon, "periodic")
        #expect(Self.scheduled(periodic) == ["liar"], "\(periodic)")
        let finished = try await tests.waitForDownloads(daemon, "liar to finish") {
            InstallCommandTests.state($0["liar"]) == "finished"
        }
        #expect(finished["liar"]?["bytesOnDisk"] as? Int == contents.count)
    }

    @Test("a body growing past the allowed size without declaring it (chunked): 204 before launch; downloads after")
    func bodyGrowsPastTheAllowance() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let contents = SampleAppFixture.bytes(8000, seed: 10)
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(identifier: "grows", path: "/grows.bin", contents: contents, essential: false, declaredSize: 1000)
            ]
        ) { info in
            info["BAInitialDownloadRestrictions"] = ["BADownloadAllowance": 100_000]
        }
        defer { fixture.remove() }
        // No Content-Length: nothing is declared, so only the bytes written can go past the limit.
        server.setBehavior(.chunked, for: "/grows.bin")
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await report(daemon, ["install", fixture.appDirectory])
        #expect(Self.scheduled(install) == ["grows"], "\(install)")
        let tests = InstallCommandTests()
        let failed = try await tests.waitForDownloads(daemon, "grows to fail") {
            InstallCommandTests.state($0["grows"]) == "failed"
        }
        #expect(failed["grows"]?["errorCode"] as? Int == 204, "\(failed)")
        #expect((failed["grows"]?["errorMessage"] as? String)?.contains("1000 bytes allowed") == true, "\(failed)")

        try CLIQueries.launch(daemon, app: Self.app)
        let periodic = try await simulate(daemon, "periodic")
        #expect(Self.scheduled(periodic) == ["grows"], "\(periodic)")
        let finished = try await tests.waitForDownloads(daemon, "grows to finish") {
            InstallCommandTests.state($0["grows"]) == "finished"
        }
        #expect(finished["grows"]?["bytesOnDisk"] as? Int == contents.count)
        #expect(server.requests(for: "/grows.bin").count == 2, "one refused transfer, one complete")
    }

    @Test("an essential download past its size before launch fails with 0 (its exact size is checked first), not 204")
    func essentialPastItsSizeFailsWithZero() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(
                    identifier: "core", path: "/core.bin", contents: SampleAppFixture.bytes(8000, seed: 13),
                    essential: true, declaredSize: 1000)
            ]
        ) { info in
            info["BAInitialDownloadRestrictions"] = ["BAEssentialDownloadAllowance": 100_000]
        }
        defer { fixture.remove() }
        server.setBehavior(.chunked, for: "/core.bin")
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await report(daemon, ["install", fixture.appDirectory])
        #expect(Self.scheduled(install) == ["core"], "\(install)")
        // The extension may re-queue it as non-essential once it failed: look for the essential row.
        func isFailedCore(_ row: [String: Any]) -> Bool {
            row["identifier"] as? String == "core" && row["state"] as? String == "failed"
        }
        let rows = try await CLIQueries.pollDownloads(
            "core to fail", daemon, app: Self.app, timeout: 60, until: { $0.contains(where: isFailedCore) })
        let failed = try #require(rows.first(where: isFailedCore))
        #expect(failed["essential"] as? Bool == true, "\(failed)")
        #expect(failed["errorCode"] as? Int == 0, "\(failed)")
        #expect((failed["errorMessage"] as? String)?.contains("expected 1000") == true, "\(failed)")
    }

    @Test("downloads queued before the first launch lose their byte limit and allow-list at the launch, and complete")
    func launchLiftsTheRestrictionsOfQueuedDownloads() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let port = try #require(URL(string: server.baseURL)?.port)
        let contents = SampleAppFixture.bytes(8000, seed: 11)
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                // Declares 1000 bytes and sends 8000 without a length: 204 if still limited.
                .init(
                    identifier: "grows", path: "/grows.bin", contents: contents, essential: false, declaredSize: 1000),
                // Redirects to localhost, outside the allow-list: 202 if still restricted.
                .init(identifier: "moved", path: "/moved.bin", contents: contents, essential: false),
            ]
        ) { info in
            info["BAInitialDownloadRestrictions"] = [
                "BADownloadAllowance": 100_000, "BADownloadDomainAllowList": ["127.0.0.1"],
            ]
        }
        defer { fixture.remove() }
        server.setBehavior(.chunked, for: "/grows.bin")
        server.setFile("/moved-target.bin", contents: contents)
        server.setBehavior(.redirect(to: "http://localhost:\(port)/moved-target.bin"), for: "/moved.bin")
        // One background slot, held by another (launched) app's stalled download, so the sample
        // app's downloads wait in the queue across its first launch.
        let daemon = try await SchedulingTests.daemon(settings: ["backgroundDownloadConcurrency": 1])
        defer { daemon.kill() }
        let blocker = "com.example.blocker"
        let cli = try daemon.cliClient()
        try daemon.register(blocker, version: "1", group: "group.\(blocker)")
        cli.close()
        server.setFile("/slot.bin", contents: SampleAppFixture.bytes(100_000, seed: 12))
        server.setBehavior(.stall(afterBytes: 10), for: "/slot.bin")
        let blockerApp = try daemon.appClient(blocker)
        defer { blockerApp.close() }
        _ = try blockerApp.call(.schedule(DownloadDescription(identifier: "slot", url: server.url("/slot.bin"))))
        _ = try await CLIQueries.poll(
            "the blocker's request", daemon, timeout: 30, read: { server.requests(for: "/slot.bin").count },
            until: { $0 >= 1 })

        let install = try await report(daemon, ["install", fixture.appDirectory])
        #expect(Set(Self.scheduled(install)) == ["grows", "moved"], "\(install)")
        #expect(server.requests(for: "/grows.bin").isEmpty && server.requests(for: "/moved.bin").isEmpty)

        try CLIQueries.launch(daemon, app: Self.app)
        _ = try blockerApp.call(.cancel(identifier: "slot"))
        let tests = InstallCommandTests()
        let ended = try await tests.waitForDownloads(daemon, "both to end") { rows in
            ["grows", "moved"].allSatisfy { ["finished", "failed"].contains(InstallCommandTests.state(rows[$0])) }
        }
        for identifier in ["grows", "moved"] {
            #expect(InstallCommandTests.state(ended[identifier]) == "finished", "\(identifier): \(ended)")
            #expect(ended[identifier]?["bytesOnDisk"] as? Int == contents.count, "\(identifier): \(ended)")
        }
        #expect(server.requests(for: "/moved-target.bin").count == 1)
    }
}
