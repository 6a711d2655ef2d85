import BAAssetServer
import BAHashing
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Google Play's rule, with a real basd, a real loopback server and NetworkManager's `Metered` from
/// a stand-in on a private system bus: a prefetch pack with more than `meteredPackConsentBytes` to
/// fetch waits on a metered network (`waitingFor: meteredNetwork`) until the network is not
/// metered or the app asks for it; a pack under the threshold and an essential one go on; the
/// sizes are listed before anything is fetched; a running fetch parks while metered and resumes.
@Suite("metered-network consent for asset packs", .serialized, .timeLimit(.minutes(3)))
struct PackMeteredConsentTests {
    let ba = BuildProducts.executable("ba")
    static let big = PackFixture.random(3 << 20, seed: 3501)
    static let threshold = 1_000_000

    /// The fixture with `base` (essential, 2 MiB), `small` (prefetch, 200 KB) and `big` (prefetch,
    /// 3 MiB) published in 1 MiB bundles, and a basd on `system` whose network is `metered`.
    static func start(
        _ system: TestBus, metered: UInt32, waitOnMeteredNetwork: Bool = false
    ) async throws -> (PackFixture, DaemonProcess, ChildProcess) {
        let fixture = try await PackFixture.make()
        try fixture.write(
            pack: "base", policy: PackFixture.essential, files: ["a.bin": PackFixture.random(2 << 20, seed: 3502)])
        try fixture.write(
            pack: "small", policy: PackFixture.prefetch, files: ["s.bin": PackFixture.random(200_000, seed: 3503)])
        try fixture.write(pack: "big", policy: PackFixture.prefetch, files: ["b.bin": big])
        try fixture.write(
            pack: "later", policy: PackFixture.onDemand, files: ["l.bin": PackFixture.random(100_000, seed: 3504)])
        try await fixture.publish(["base", "small", "big", "later"], version: 1, bundleSize: 1 << 20)
        let waits = waitOnMeteredNetwork ? "" : #""waitOnMeteredNetwork": false, "#
        let (daemon, manager) = try await DesktopIntegrationTests.daemonOnNetwork(
            system, metered: metered, settings: #"{\#(waits)"meteredPackConsentBytes": \#(threshold)}"#)
        return (fixture, daemon, manager)
    }

    /// Bundle requests for `pack`'s version 1.
    static func bundleRequests(_ fixture: PackFixture, _ pack: String) -> [RecordedRequest] {
        fixture.server.requests.filter { $0.path.hasPrefix("/packs/\(pack)/1-") && $0.path.hasSuffix(".bundle") }
    }

    @Test(
        "over the threshold on a metered network a prefetch pack waits, sizes listed; under it and essential go; unmetered, it goes"
    )
    func waitsUntilUnmetered() async throws {
        try #require(TestBus.available, Comment(rawValue: TestBus.unavailableReason ?? ""))
        let system = try TestBus(.system)
        defer { system.stop() }
        let (fixture, daemon, manager) = try await Self.start(system, metered: 1)
        defer { fixture.remove() }
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")

        let packs = try await fixture.waitForPacks(daemon, "small local and big waiting for the metered network") {
            $0["small"]?["localVersion"] as? Int == 1 && $0["big"]?["waitingFor"] as? String == "meteredNetwork"
        }
        // Essential (2 MiB, over the threshold) and small (under it) went on the metered network.
        #expect(packs["base"]?["localVersion"] as? Int == 1, "\(packs)")
        #expect(packs["base"]?["fetchBytes"] as? Int == 0 && packs["base"]?["writeBytes"] as? Int == 0, "\(packs)")
        // Big: planned, nothing of it fetched; what it will fetch and write is listed.
        let big = try #require(packs["big"])
        #expect((big["status"] as? String)?.contains("downloading") == true, "\(big)")
        let fetch = try #require(big["fetchBytes"] as? Int, "\(big)")
        #expect(fetch > Self.threshold && fetch <= big["downloadSize"] as? Int ?? 0, "\(big)")
        #expect(big["writeBytes"] as? Int == Self.big.count, "\(big)")
        #expect(Self.bundleRequests(fixture, "big").isEmpty, "\(fixture.server.requests)")
        // On demand, not started: the manifest's size to fetch; what it writes is not known yet.
        let later = try #require(packs["later"])
        #expect(later["fetchBytes"] as? Int == later["downloadSize"] as? Int && later["fetchBytes"] != nil, "\(later)")
        #expect(later["writeBytes"] == nil && later["waitingFor"] == nil, "\(later)")
        try await DesktopIntegrationTests.logged(daemon, "more than meteredPackConsentBytes (\(Self.threshold))")

        // The CLI's table and the Python client say the same.
        let table = try await runProcess(ba, ["packs", "--app", PackFixture.app, "--socket", daemon.socketPath])
        let bigLine = table.stdout.split(separator: "\n").first { $0.contains(" big ") } ?? ""
        #expect(bigLine.contains("0 B of 3.0 MiB, ") && bigLine.contains(" to fetch"), "\(table.stdout)")
        #expect(table.stdout.contains("waiting for meteredNetwork"), "\(table.stdout)")
        let python = try await runProcess(
            "/usr/bin/env",
            [
                "python3", "-c",
                "from background_assets import AppClient\nwith AppClient('\(PackFixture.app)') as c: print(tuple(c.estimate('big')))",
            ],
            environment: [
                "PYTHONPATH": BuildProducts.source("clients/python"), "PYTHONDONTWRITEBYTECODE": "1",
                "BA_SOCKET": daemon.socketPath,
            ])
        #expect(python.stdout == "(\(fetch), \(Self.big.count), True)\n", "\(python.stdout)\(python.stderr)")

        // The Swift app API's Linux addition says the same.
        let app = try TestApp(
            socketPath: daemon.socketPath, bundleIdentifier: PackFixture.app, group: PackFixture.group)
        defer { app.kill() }
        let estimate = try await app.run("estimate big")
        #expect(estimate.bool("ok") == true, "\(estimate)")
        #expect(estimate.int("fetch") == fetch && estimate.int("write") == Self.big.count, "\(estimate)")
        #expect(estimate.bool("waits") == true, "\(estimate)")
        let unknown = try await app.run("estimate nothing")
        #expect(unknown.bool("ok") == false, "\(unknown)")

        // Not metered any more: it goes.
        try DesktopIntegrationTests.setMetered(manager, 2)
        let done = try await fixture.waitForPacks(daemon, "big local once the network is not metered") {
            $0["big"]?["localVersion"] as? Int == 1
        }
        #expect(done["big"]?["fetchBytes"] as? Int == 0, "\(done)")
        #expect(!Self.bundleRequests(fixture, "big").isEmpty)
    }

    @Test(
        "asking is consent: the app's ensure (the Python client) starts a waiting pack at once on the metered network")
    func askingIsConsent() async throws {
        try #require(TestBus.available, Comment(rawValue: TestBus.unavailableReason ?? ""))
        let system = try TestBus(.system)
        defer { system.stop() }
        let (fixture, daemon, _) = try await Self.start(system, metered: 1)
        defer { fixture.remove() }
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        _ = try await fixture.waitForPacks(daemon, "big waiting for the metered network") {
            $0["big"]?["waitingFor"] as? String == "meteredNetwork"
        }
        let ensure = try await PythonClientTests.example(
            "ensure_pack.py", [PackFixture.app, "big", "big/b.bin"], socket: daemon.socketPath)
        #expect(ensure.status == 0, "\(ensure.stdout)\(ensure.stderr)")
        #expect(
            ensure.stdout.hasSuffix("read big/b.bin \(Self.big.count) \(SHA256Hasher.hex(of: Self.big))\n"),
            "\(ensure.stdout)")
        // Still metered: the network did not change, the request did.
        try await DesktopIntegrationTests.logged(daemon, "network: metered")
        #expect(!daemon.standardError.contains("network: not metered"))
    }

    @Test(
        "metered and unmetered again and again mid-download: the running fetch parks keeping its bytes and resumes with Range"
    )
    func flipsMidDownload() async throws {
        try #require(TestBus.available, Comment(rawValue: TestBus.unavailableReason ?? ""))
        let system = try TestBus(.system)
        defer { system.stop() }
        let (fixture, daemon, manager) = try await Self.start(system, metered: 2)
        defer { fixture.remove() }
        defer { daemon.kill() }
        // The first bundle of big stops after 300 000 bytes: its fetch stays under way.
        fixture.server.setBehavior(.stall(afterBytes: 300_000), for: "/packs/big/1-0.bundle")
        let events = try ChildProcess(ba, ["events", "--follow", "--json", "--socket", daemon.socketPath])
        defer { events.kill() }
        try await offThePool {
            try events.wait("ba events to follow", timeout: 30) { child in
                child.stderrLines.contains { $0.contains("following events from basd") }
            }
        }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        _ = try await fixture.waitForPacks(daemon, "big's first bundle under way, unmetered") { _ in
            !fixture.server.requests(for: "/packs/big/1-0.bundle").isEmpty
        }
        for round in 0..<3 {
            try DesktopIntegrationTests.setMetered(manager, 1)
            _ = try await fixture.waitForPacks(daemon, "big waiting, metered (round \(round))") {
                $0["big"]?["waitingFor"] as? String == "meteredNetwork"
            }
            try DesktopIntegrationTests.setMetered(manager, 2)
            _ = try await fixture.waitForPacks(daemon, "big going on, unmetered (round \(round))") {
                $0["big"]?["waitingFor"] == nil
            }
        }
        try DesktopIntegrationTests.setMetered(manager, 1)
        _ = try await fixture.waitForPacks(daemon, "big waiting, metered") {
            $0["big"]?["waitingFor"] as? String == "meteredNetwork"
        }
        fixture.server.setBehavior(nil, for: "/packs/big/1-0.bundle")
        try DesktopIntegrationTests.setMetered(manager, 2)
        _ = try await fixture.waitForPacks(daemon, "big local") { $0["big"]?["localVersion"] as? Int == 1 }
        // Its followers heard each wait and each going on, once, then the end.
        let kinds = try await offThePool {
            try events.wait("big's finished event", timeout: 30) { child in
                Self.packEvents(child.stdoutLines, "big").last == "finished"
            }
            return Self.packEvents(events.stdoutLines, "big")
        }
        let cycle = ["paused meteredNetwork", "began"]
        var expected = ["began"]
        for _ in 0..<4 { expected += cycle }
        expected.append("finished")
        #expect(kinds == expected, "\(kinds)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: PackFixture.packPath(daemon, "big") + "/big/b.bin"))
        #expect(Array(bytes) == Self.big)
        // Parked and resumed from what it had: later requests of the bundle ask for a Range.
        let requests = fixture.server.requests(for: "/packs/big/1-0.bundle")
        #expect(requests.count >= 2, "\(requests)")
        #expect(requests.dropFirst().contains { $0.header("range") != nil }, "\(requests)")
        try await DesktopIntegrationTests.logged(daemon, "the network is not metered (or consent was given); going on")
    }

    @Test(
        "waitOnMeteredNetwork on (the default): every prefetch pack waits; `ba packs ensure` (consent) starts the large one at once"
    )
    func ensureWithTheBackgroundHold() async throws {
        try #require(TestBus.available, Comment(rawValue: TestBus.unavailableReason ?? ""))
        let system = try TestBus(.system)
        defer { system.stop() }
        let (fixture, daemon, _) = try await Self.start(system, metered: 1, waitOnMeteredNetwork: true)
        defer { fixture.remove() }
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        let waiting = try await fixture.waitForPacks(daemon, "small and big waiting for the metered network") {
            $0["small"]?["waitingFor"] as? String == "meteredNetwork"
                && $0["big"]?["waitingFor"] as? String == "meteredNetwork"
        }
        #expect(waiting["base"]?["localVersion"] as? Int == 1, "\(waiting)")
        let ensure = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "big", "--socket", daemon.socketPath])
        #expect(ensure.status == 0, "\(ensure.stdout)\(ensure.stderr)")
        let after = try await fixture.packs(daemon)
        #expect(after["big"]?["localVersion"] as? Int == 1, "\(after)")
        // The one not asked for still waits (the background hold: today's rule under the threshold).
        #expect(after["small"]?["localVersion"] == nil, "\(after)")
        #expect(after["small"]?["waitingFor"] as? String == "meteredNetwork", "\(after)")
    }

    @Test("a manifest that gives a small downloadSize for a large pack: its index is refused (1102), no bundle fetched")
    func aLyingManifestSlipsNothingThrough() async throws {
        try #require(TestBus.available, Comment(rawValue: TestBus.unavailableReason ?? ""))
        let system = try TestBus(.system)
        defer { system.stop() }
        let (fixture, daemon, _) = try await Self.start(system, metered: 1)
        defer { fixture.remove() }
        defer { daemon.kill() }
        // The publisher's manifest (unsigned here) says big needs 500 000 bytes, under the threshold.
        let path = fixture.publish + "/manifest.json"
        var manifest = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        var entries = try #require(manifest["assetPacks"] as? [[String: Any]])
        for number in entries.indices
        where entries[number]["assetPackID"] as? String == "big" || entries[number]["id"] as? String == "big" {
            entries[number]["downloadSize"] = 500_000
        }
        manifest["assetPacks"] = entries
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: path))

        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        let packs = try await fixture.waitForPacks(daemon, "big to fail") { $0["big"]?["errorCode"] != nil }
        #expect(packs["big"]?["errorCode"] as? Int == 1102, "\(packs)")
        #expect(packs["big"]?["localVersion"] == nil, "\(packs)")
        // Until then it said the manifest's figure, the only one known before the index.
        #expect(packs["big"]?["fetchBytes"] as? Int == 500_000, "\(packs)")
        #expect(Self.bundleRequests(fixture, "big").isEmpty, "\(fixture.server.requests)")
        try await DesktopIntegrationTests.logged(daemon, "more than the 500000 the signed manifest gives: refused")
    }

    /// The kinds of `pack`'s events in `ba events --follow --json` lines, without `progress`
    /// (`paused` with what it waits for).
    static func packEvents(_ lines: [String], _ pack: String) -> [String] {
        lines.compactMap { line -> String? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let event = object["pack"] as? [String: Any], event["assetPackID"] as? String == pack,
                let kind = event["kind"] as? String, kind != "progress"
            else { return nil }
            return ([kind] + [event["waitingFor"] as? String].compactMap { $0 }).joined(separator: " ")
        }
    }
}
