import BATestSupport
import Foundation
import Testing

/// Apple's OS 26 self-hosted `AssetPackManifest` end to end: packs published with `ba pack` (the
/// download manifest in Apple's shape, format 3) to a loopback server, a real basd, and an
/// unmanaged extension's real `.so` (Plugins/TestPlugins/BATestSelfHostedPacks) that reads the
/// manifest basd gives it with `AssetPackManifest(contentsOf:appGroupID:)` and returns
/// `allDownloads(for:)`. basd installs each pack into the app group, where the app reads it.
@Suite("self-hosted asset packs an extension returns", .timeLimit(.minutes(5)))
struct SelfHostedPackTests {
    let ba = BuildProducts.executable("ba")

    /// A fixture whose app manages its packs itself (no `BAHasManagedAssetPacks`) and whose
    /// extension is BATestSelfHostedPacks, with an essential `base`, a prefetch `levels` and an
    /// on-demand `extras`, version `version`.
    static func fixture(version: Int = 1) async throws -> PackFixture {
        let fixture = try await PackFixture.make()
        try fixture.useExtension("BATestSelfHostedPacks") { $0["BAHasManagedAssetPacks"] = nil }
        for (id, policy) in [
            ("base", PackFixture.essential), ("levels", PackFixture.prefetch), ("extras", PackFixture.onDemand),
        ] {
            let file = try #require(files[id])
            try fixture.write(
                pack: id, policy: policy, files: [file.name: PackFixture.random(file.count, seed: file.seed)])
        }
        try await fixture.publish(["base", "levels", "extras"], version: version)
        return fixture
    }

    /// The one file of each of the fixture's packs: its name, size and random seed.
    static let files: [String: (name: String, count: Int, seed: UInt64)] = [
        "base": ("a.bin", 200_000, 1), "levels": ("l.bin", 300_000, 2), "extras": ("x.bin", 50_000, 3),
    ]

    /// Whether the app reads pack `id`'s file, whole, at `CONTAINER/AssetPacks/ID/ID/FILE` (the
    /// fixture's packs select the folder named as the pack). Its arguments are names only: a
    /// failed expectation prints them, not megabytes.
    static func holds(_ daemon: DaemonProcess, _ id: String) -> Bool {
        guard let file = files[id], let data = FileManager.default.contents(atPath: path(daemon, id, file.name))
        else { return false }
        return [UInt8](data) == PackFixture.random(file.count, seed: file.seed)
    }

    static func path(_ daemon: DaemonProcess, _ id: String, _ file: String) -> String {
        PackFixture.packPath(daemon, id) + "/" + id + "/" + file
    }

    @Test(
        "ba install: the essential pack is in the app group when it returns, the prefetch one follows, the on-demand one is not fetched, and the extension hears each finish with the pack's folder"
    )
    func installsTheApplicablePacks() async throws {
        let fixture = try await Self.fixture()
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        #expect(await daemon.logged("self-hosted downloads: base!,levels"), "\(daemon.standardError)")
        // Essential: in place when ba install returns (the app cannot launch before).
        #expect(Self.holds(daemon, "base"), "\(daemon.standardError)")
        let packs = try await fixture.waitForPacks(daemon, "levels to be local") {
            $0["levels"]?["localVersion"] as? Int == 1
        }
        #expect(Self.holds(daemon, "levels"))
        #expect(packs["base"]?["localVersion"] as? Int == 1, "\(packs)")
        #expect(packs["extras"] == nil, "\(packs)")
        #expect(fixture.server.requests(for: "/packs/extras/1.json").isEmpty)
        let folder = "/AppAssetPacks/\(PackFixture.app)/base"
        #expect(await daemon.logged("self-hosted finished: base at "), "\(daemon.standardError)")
        #expect(daemon.standardError.contains(folder), "\(daemon.standardError)")
        #expect(await daemon.logged("self-hosted finished: levels at "), "\(daemon.standardError)")
        // The finished "file" is the pack's link: after the extension returned it is still there.
        #expect(Self.holds(daemon, "base"))
    }

    @Test(
        "a lying CDN: an index that is not the manifest's fails the download with why, installs nothing, and the extension hears the failure"
    )
    func refusesAnIndexOtherThanTheManifests() async throws {
        let fixture = try await Self.fixture()
        defer { fixture.remove() }
        // The CDN serves other bytes for base's index than the manifest's indexSHA256 names.
        let index = fixture.publish + "/packs/base/1.json"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: index))
        bytes.append(contentsOf: Array(" ".utf8))
        try bytes.write(to: URL(fileURLWithPath: index))
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(await daemon.logged("self-hosted failed: base"), "\(install.stdout)\(daemon.standardError)")
        #expect(daemon.standardError.contains("not the"), "\(daemon.standardError)")
        #expect(!FileManager.default.fileExists(atPath: Self.path(daemon, "base", "a.bin")))
        // The other pack is not held up by it.
        _ = try await fixture.waitForPacks(daemon, "levels to be local") { $0["levels"]?["localVersion"] as? Int == 1 }
    }

    @Test(
        "a replayed manifest: version 2 in place, a manifest of version 1 again is refused (the pack is not taken back), version 2 stays"
    )
    func refusesAnOlderVersion() async throws {
        let fixture = try await Self.fixture(version: 1)
        defer { fixture.remove() }
        let old = try Data(contentsOf: URL(fileURLWithPath: fixture.publish + "/manifest.json"))
        try await fixture.publish(["base", "levels"], version: 2)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        _ = try await fixture.waitForPacks(daemon, "levels 2 to be local") {
            $0["base"]?["localVersion"] as? Int == 2 && $0["levels"]?["localVersion"] as? Int == 2
        }
        // The old manifest again (served by a CDN that lags, or replayed), and a periodic wake.
        try old.write(to: URL(fileURLWithPath: fixture.publish + "/manifest.json"))
        let simulate = try await runProcess(
            ba, ["simulate", "periodic", "--app", PackFixture.app, "--socket", daemon.socketPath])
        #expect(simulate.status == 0, "\(simulate.stdout)\(simulate.stderr)")
        #expect(await daemon.logged("self-hosted failed: base"), "\(daemon.standardError)")
        #expect(daemon.standardError.contains("older than version 2 in place"), "\(daemon.standardError)")
        let packs = try await fixture.packs(daemon)
        #expect(packs["base"]?["localVersion"] as? Int == 2, "\(packs)")
    }

    @Test(
        "kill -9 while a prefetch pack is being fetched: the restarted basd resumes the download, installs the pack, and the extension hears it finish"
    )
    func resumesAfterKill() async throws {
        let fixture = try await Self.fixture()
        defer { fixture.remove() }
        let bundle = "/packs/levels/1-0.bundle"
        fixture.server.setBehavior(.stall(afterBytes: 0), for: bundle)
        var daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        _ = try await fixture.waitForPacks(daemon, "levels to be fetched") { _ in
            !fixture.server.requests(for: bundle).isEmpty
        }
        #expect(!FileManager.default.fileExists(atPath: Self.path(daemon, "levels", "l.bin")))
        fixture.server.setBehavior(nil, for: bundle)
        daemon = try await daemon.restarted()
        _ = try await fixture.waitForPacks(daemon, "levels to be local after the restart") {
            $0["levels"]?["localVersion"] as? Int == 1
        }
        #expect(Self.holds(daemon, "levels"))
        #expect(await daemon.logged("self-hosted finished: levels at "), "\(daemon.standardError)")
    }

    @Test(
        "the app itself: allDownloads(for: nil) scheduled with BADownloadManager installs every pack, on-demand too, none essential; the delegate hears each finish with the pack's folder, which stays"
    )
    func theAppSchedulesEveryPack() async throws {
        let fixture = try await Self.fixture()
        defer { fixture.remove() }
        // No extension: the app manages its packs from its own code.
        try fixture.editInfoPlist { $0["BAExtensionPath"] = nil }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        let app = try TestApp(
            socketPath: daemon.socketPath, bundleIdentifier: PackFixture.app, group: PackFixture.group)
        defer { app.kill() }

        let scheduled = try await app.run("selfhosted \(fixture.publish)/manifest.json")
        #expect(scheduled.bool("ok") == true, "\(scheduled.object)")
        #expect(scheduled.object["identifiers"] as? [String] == ["base", "extras", "levels"], "\(scheduled.object)")
        let finished = try await app.wait(timeout: 60, "three finished", count: 3) { $0.callback == "finished" }
        #expect(Set(finished.compactMap { $0.string("identifier") }) == ["base", "extras", "levels"])
        for line in finished {
            #expect(line.bool("folder") == true, "\(line.object)")
            let suffix = "/AppAssetPacks/\(PackFixture.app)/\(line.string("identifier") ?? "")"
            #expect(line.string("path")?.hasSuffix(suffix) == true, "\(line.object)")
        }
        // The library left the pack's link in place after the callback.
        #expect(Self.holds(daemon, "base"))
        #expect(Self.holds(daemon, "levels"))
        #expect(Self.holds(daemon, "extras"))
    }
}
