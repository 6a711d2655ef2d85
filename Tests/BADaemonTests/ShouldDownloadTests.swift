import BATestSupport
import Foundation
import Testing

/// `ManagedDownloaderExtension.shouldDownload(_:)` end to end: packs published with `ba pack` to a
/// loopback server, a real basd, the extension's real `.so` in a real runner. Before `ba install`
/// downloads the essential and prefetch packs, basd asks the extension once about all of them;
/// what it declines is not downloaded (and not waited for), stays listed as available and
/// declined, and still comes on request. A call that fails declines nothing.
@Suite("the extension decides which asset packs download", .timeLimit(.minutes(5)))
struct ShouldDownloadTests {
    let ba = BuildProducts.executable("ba")

    /// A fixture whose app has `extension` as its BAExtensionPath, with an essential `base`, a
    /// prefetch `levels`, and `extras` (essential, so that an install would wait for it) plus
    /// any `more` prefetch packs, all version 1.
    static func fixture(extension library: String, more: [String] = []) async throws -> PackFixture {
        let fixture = try await PackFixture.make()
        try fixture.useExtension(library)
        try fixture.write(
            pack: "base", policy: PackFixture.essential, files: ["a.bin": PackFixture.random(200_000, seed: 1)])
        try fixture.write(
            pack: "levels", policy: PackFixture.prefetch, files: ["l.bin": PackFixture.random(300_000, seed: 2)])
        try fixture.write(
            pack: "extras", policy: PackFixture.essential, files: ["x.bin": PackFixture.random(100_000, seed: 3)])
        for (index, id) in more.enumerated() {
            try fixture.write(
                pack: id, policy: PackFixture.prefetch,
                files: ["m.bin": PackFixture.random(50_000, seed: 10 + UInt64(index))])
        }
        try await fixture.publish(["base", "levels", "extras"] + more, version: 1)
        return fixture
    }

    /// The app's recent extension runs (`ba apps --json`), newest first.
    static func runs(_ daemon: DaemonProcess) async throws -> [[String: Any]] {
        try await CLIQueries.app(daemon)["lastRuns"] as? [[String: Any]] ?? []
    }

    @Test(
        "a Swift and a C extension each decline extras on ba install: not fetched, not waited for, listed as declined; ensure still downloads it",
        arguments: ["BATestManagedExtension", "BATestShouldDownload"])
    func declinedPackStaysAvailable(library: String) async throws {
        let fixture = try await Self.fixture(extension: library)
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        // ba install returned with base local and named (basd says which essential packs it
        // waits for), and without extras, essential but declined: not local, not downloading,
        // not named.
        #expect(install.stdout.contains("essential packs local: base\n"), "\(install.stdout)")
        let installed = try await fixture.packs(daemon)
        #expect(installed["base"]?["localVersion"] as? Int == 1, "\(installed)")
        #expect(installed["extras"]?["status"] as? String == "downloadAvailable", "\(installed)")
        #expect(!install.stdout.contains("extras"), "\(install.stdout)")
        let packs = try await fixture.waitForPacks(daemon, "levels to be local") {
            $0["levels"]?["localVersion"] as? Int == 1
        }
        #expect(packs["base"]?["localVersion"] as? Int == 1, "\(packs)")
        #expect(packs["base"]?["declined"] == nil, "\(packs)")
        let extras = try #require(packs["extras"])
        #expect(extras["localVersion"] == nil, "\(extras)")
        #expect(extras["declined"] as? Bool == true, "\(extras)")
        #expect((extras["status"] as? String) == "downloadAvailable", "\(extras)")
        // Nothing of extras was fetched: not even its index.
        #expect(fixture.server.requests(for: "/packs/extras/1.json").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: PackFixture.packPath(daemon, "extras")))
        // Asked once, about the three packs, and recorded as its own run.
        let asked = try await Self.runs(daemon).filter { $0["event"] as? String == "shouldDownload" }
        #expect(asked.count == 1 && asked.first?["verdict"] as? String == "ok", "\(asked)")
        #expect(await daemon.logged("its extension declined extras"), "\(daemon.standardError)")

        // Kept across a restart, and a periodic check (which retries install-time packs that
        // never arrived) leaves it alone.
        let restarted = try await daemon.restarted()
        defer { restarted.kill() }
        let check = try await runProcess(ba, ["packs", "check", PackFixture.app, "--socket", restarted.socketPath])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        let checked = try await fixture.packs(restarted)
        #expect(checked["extras"]?["declined"] as? Bool == true, "\(checked)")
        #expect(checked["extras"]?["localVersion"] == nil, "\(checked)")
        #expect(checked["extras"]?["status"] as? String == "downloadAvailable", "\(checked)")
        #expect(fixture.server.requests(for: "/packs/extras/1.json").isEmpty)

        // The app can still ask for it.
        let ensure = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "extras", "--socket", restarted.socketPath])
        #expect(ensure.status == 0, "\(ensure.stdout)\(ensure.stderr)")
        let after = try await fixture.waitForPacks(restarted, "extras to be local") {
            $0["extras"]?["localVersion"] as? Int == 1
        }
        #expect(after["extras"]?["declined"] == nil, "\(after)")
        #expect(
            AssetPackTests.same(
                PackFixture.packPath(restarted, "extras") + "/extras/x.bin", PackFixture.random(100_000, seed: 3)))
    }

    @Test("ba update asks the extension again: the pack it declines again stays declined")
    func updateAsksAgain() async throws {
        let fixture = try await Self.fixture(extension: "BATestShouldDownload")
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        // Version 2 of base and extras (both essential for subsequentUpdate too).
        try fixture.write(
            pack: "base", policy: PackFixture.essential, files: ["a.bin": PackFixture.random(200_000, seed: 11)])
        try fixture.write(
            pack: "extras", policy: PackFixture.essential, files: ["x.bin": PackFixture.random(100_000, seed: 13)])
        try await fixture.publish(["base", "extras"], version: 2)
        let update = try await runProcess(ba, ["update", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(update.status == 0, "\(update.stdout)\(update.stderr)\n\(daemon.standardError)")
        let packs = try await fixture.packs(daemon)
        #expect(packs["base"]?["localVersion"] as? Int == 2, "\(packs)")
        #expect(packs["extras"]?["localVersion"] == nil && packs["extras"]?["declined"] as? Bool == true, "\(packs)")
        #expect(fixture.server.requests(for: "/packs/extras/2.json").isEmpty)
        let asked = try await Self.runs(daemon).filter { $0["event"] as? String == "shouldDownload" }
        #expect(asked.count == 2, "\(asked)")
    }

    @Test("a shouldDownload that crashes declines nothing: every pack downloads, the crash is recorded")
    func crashDownloadsEverything() async throws {
        // BATestShouldDownload writes through NULL when asked about the pack "crash".
        let fixture = try await Self.fixture(extension: "BATestShouldDownload", more: ["crash"])
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        // Asked in pack-ID order, the extension crashed at "crash", before "extras" (which it
        // declines): a call that crashed decides nothing, so ba install returned with both
        // essential packs local.
        #expect(install.stdout.contains("essential packs local: "), "\(install.stdout)")
        #expect(install.stdout.contains("extras"), "\(install.stdout)")
        let installed = try await fixture.packs(daemon)
        #expect(installed["base"]?["localVersion"] as? Int == 1, "\(installed)")
        #expect(installed["extras"]?["localVersion"] as? Int == 1, "\(installed)")
        let packs = try await fixture.waitForPacks(daemon, "every pack to be local") { packs in
            ["base", "levels", "extras", "crash"].allSatisfy { packs[$0]?["localVersion"] as? Int == 1 }
        }
        #expect(packs.values.allSatisfy { $0["declined"] == nil }, "\(packs)")
        let asked = try await Self.runs(daemon).filter { $0["event"] as? String == "shouldDownload" }
        #expect(asked.count == 1 && asked.first?["verdict"] as? String == "crashed", "\(asked)")
        #expect(await daemon.logged("shouldDownload ended crashed"), "\(daemon.standardError)")
    }
}
