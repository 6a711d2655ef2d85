import BAAssetServer
import BATestSupport
import Foundation
import Testing

@testable import BADaemon

/// Low Power Mode: the profile table, then a real basd reading a fake power-profile file
/// (`BASD_POWER_PROFILE_FILE`): background work waits (periodic runs, events, background
/// downloads), an install's call and its essentials go on.
@Suite("Low Power Mode", .timeLimit(.minutes(3)))
struct LowPowerModeTests {
    let ba = BuildProducts.executable("ba")

    @Test(
        "what a power-profile source says",
        arguments: [
            ("power-saver\n", "power-saver", true),
            ("low-power\n", "low-power", true),
            ("quiet", "quiet", true),
            ("balanced\n", "balanced", false),
            ("performance", "performance", false),
            ("[State]\nProfile=power-saver\nPreviousProfile=balanced\n", "power-saver", true),
            ("[State]\nProfile=balanced\n", "balanced", false),
            ("", nil, false),
            ("a=b\n", nil, false),
        ] as [(String, String?, Bool)])
    func profileTable(text: String, name: String?, lowPower: Bool) {
        #expect(LowPowerMode.profileName(in: text) == name)
        #expect((name.map(LowPowerMode.isLowPower) ?? false) == lowPower)
    }

    @Test("the first readable source decides; none readable is not Low Power Mode")
    func sources() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let saver = try directory.write("ppd.ini", "[State]\nProfile=power-saver\n")
        let acpi = try directory.write("platform_profile", "balanced\n")
        #expect(
            LowPowerMode(sources: [directory.path + "/missing", saver, acpi]).reason()?.contains("power-saver") == true)
        #expect(LowPowerMode(sources: [acpi, saver]).reason() == nil)
        #expect(LowPowerMode(sources: [directory.path + "/missing"]).reason() == nil)
        #expect(LowPowerMode.fromEnvironment(["BASD_POWER_PROFILE_FILE": saver]).sources == [saver])
    }

    /// A basd reading its power profile from a file that says power-saver, with a quick scheduler
    /// tick (a quarter of the minimum interval) that reads it; the file, to change the profile.
    static func daemonInPowerSaver(
        environment: [String: String] = [:]
    ) async throws -> (
        DaemonProcess, profile: String
    ) {
        let directory = try TemporaryDirectory()
        let profile = try directory.write("profile", "power-saver\n")
        try FileManager.default.createDirectory(atPath: directory.path + "/state", withIntermediateDirectories: true)
        try Data(#"{"periodicMinimumIntervalSeconds": 1, "periodicBaseIntervalSeconds": 600}"#.utf8)
            .write(to: URL(fileURLWithPath: directory.path + "/state/config.json"))
        let daemon = try await DaemonProcess.start(
            directory: directory,
            environment: environment.merging(["BASD_POWER_PROFILE_FILE": profile]) { _, profile in profile })
        return (daemon, profile)
    }

    @Test(
        "an app registered in power-saver through the drop-in folder gets its install call and essentials at once; its background download waits; balanced, it goes on"
    )
    func basdFollowsThePowerProfile() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let share = try TemporaryDirectory()
        defer { share.remove() }
        let folder = share.path + "/background-assets/apps"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let (daemon, profile) = try await Self.daemonInPowerSaver(environment: [
            "XDG_DATA_DIRS": share.path, "XDG_DATA_HOME": share.path + "/home",
        ])
        defer { daemon.kill() }
        _ = try await CLIQueries.poll(
            "basd to see the power-saver profile", daemon, timeout: 20, read: { daemon.standardError },
            until: { $0.contains("Low Power Mode is on") })
        // Held after its first 64 KiB until the test lets it go: it cannot finish before Low Power
        // Mode holds it, however slow the machine.
        server.setBehavior(.stall(afterBytes: 64 << 10), for: "/levels/level-1.pak")
        let catalog = SampleAppFixture.catalog
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(identifier: "catalog", path: "/catalog.json", contents: catalog, essential: true),
                .init(
                    identifier: "level-1", path: "/levels/level-1.pak",
                    contents: SampleAppFixture.bytes(1 << 20, seed: 4), essential: false),
            ])
        defer { fixture.remove() }

        // A package registers the app while the machine is in power-saver: the user is waiting for
        // its essential content, so the install call runs at once (docs/lifecycle.md).
        try FileManager.default.createSymbolicLink(
            atPath: folder + "/sample", withDestinationPath: fixture.appDirectory)
        _ = try await CLIQueries.poll(
            "the app to be installed from the drop-in folder", daemon, timeout: 30,
            read: { try await AppDiscoveryTests.apps(daemon) }, until: { $0[SampleAppFixture.bundleIdentifier] != nil })
        let essential = try await CLIQueries.pollDownloads(
            "the install call's essential download to finish in power-saver", daemon,
            app: SampleAppFixture.bundleIdentifier, timeout: 60,
            until: { rows in
                rows.contains { $0["identifier"] as? String == "catalog" && $0["state"] as? String == "finished" }
            })
        #expect(essential.contains { $0["identifier"] as? String == "level-1" }, "\(essential)")
        #expect(!daemon.standardError.contains("not calling the extension"), "\(daemon.standardError)")
        // The background download the call scheduled waits for Low Power Mode, never started.
        _ = try await CLIQueries.pollDownloads(
            "level-1 to wait for Low Power Mode", daemon, app: SampleAppFixture.bundleIdentifier, timeout: 20,
            until: { rows in
                rows.contains {
                    $0["identifier"] as? String == "level-1" && $0["waitingFor"] as? String == "lowPowerMode"
                }
            })
        #expect(server.requests(for: "/levels/level-1.pak").isEmpty)

        try Data("balanced\n".utf8).write(to: URL(fileURLWithPath: profile))
        _ = try await CLIQueries.pollDownloads(
            "level-1 to start", daemon, app: SampleAppFixture.bundleIdentifier, timeout: 30,
            until: { rows in
                rows.contains { $0["identifier"] as? String == "level-1" && ($0["bytesOnDisk"] as? Int ?? 0) > 0 }
            })

        // Power-saver again: the background download waits, saying why.
        try Data("power-saver\n".utf8).write(to: URL(fileURLWithPath: profile))
        let waiting = try await CLIQueries.pollDownloads(
            "level-1 to wait for Low Power Mode", daemon, app: SampleAppFixture.bundleIdentifier, timeout: 20,
            until: { rows in
                rows.contains {
                    $0["identifier"] as? String == "level-1" && $0["waitingFor"] as? String == "lowPowerMode"
                }
            })
        let level = try #require(waiting.first { $0["identifier"] as? String == "level-1" })
        #expect(level["state"] as? String != "finished", "\(level)")
        let text = try await runProcess(
            ba, ["downloads", "--app", SampleAppFixture.bundleIdentifier, "--socket", daemon.socketPath])
        #expect(text.stdout.contains("waiting for lowPowerMode"), "\(text.stdout)")

        // Balanced: it resumes (served in full now) and finishes.
        server.setBehavior(nil, for: "/levels/level-1.pak")
        try Data("balanced\n".utf8).write(to: URL(fileURLWithPath: profile))
        _ = try await CLIQueries.pollDownloads(
            "level-1 to finish", daemon, app: SampleAppFixture.bundleIdentifier, timeout: 60,
            until: { rows in
                rows.contains { $0["identifier"] as? String == "level-1" && $0["state"] as? String == "finished" }
            })
    }

    @Test("in power-saver a prefetch pack waits, saying so, while an essential one installs; balanced, it goes on")
    func packsFollowThePowerProfile() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let base = PackFixture.random(300_000, seed: 41)
        let levels = PackFixture.random(2 << 20, seed: 42)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": base])
        try fixture.write(pack: "levels", policy: PackFixture.prefetch, files: ["b.bin": levels])
        try await fixture.publish(["base", "levels"], version: 1)
        let (daemon, profile) = try await Self.daemonInPowerSaver()
        defer { daemon.kill() }
        _ = try await CLIQueries.poll(
            "basd to see the power-saver profile", daemon, timeout: 20, read: { daemon.standardError },
            until: { $0.contains("Low Power Mode is on") })

        let events = try ChildProcess(ba, ["events", "--follow", "--json", "--socket", daemon.socketPath])
        defer { events.kill() }
        // Subscribed (it says so on stderr) before anything happens.
        try await offThePool {
            try events.wait("ba events to follow", timeout: 30) { child in
                child.stderrLines.contains { $0.contains("following events from basd") }
            }
        }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        #expect(AssetPackTests.same(PackFixture.packPath(daemon, "base") + "/base/a.bin", base))
        // The prefetch pack began and was paused at once, saying why.
        try await offThePool {
            try events.wait("levels paused for Low Power Mode", timeout: 30) { child in
                child.stdoutLines.contains {
                    $0.contains(#""assetPackID":"levels""#) && $0.contains(#""kind":"paused""#)
                        && $0.contains(#""waitingFor":"lowPowerMode""#)
                }
            }
        }
        let waiting = try await fixture.waitForPacks(daemon, "levels to wait for Low Power Mode") {
            $0["levels"]?["waitingFor"] as? String == "lowPowerMode"
        }
        #expect(waiting["levels"]?["localVersion"] == nil, "\(waiting)")

        // An app following the pack sees it paused, then going on once Low Power Mode ends.
        let app = try TestApp(
            socketPath: daemon.socketPath, bundleIdentifier: PackFixture.app, group: PackFixture.group)
        defer { app.kill() }
        #expect(try await app.run("follow levels").bool("ok") == true)
        // (It was paused before the app followed; the listing says so.)
        #expect(try await app.run("local levels")["status"] as? Int == (1 << 0 | 1 << 5))  // available, downloading

        try Data("balanced\n".utf8).write(to: URL(fileURLWithPath: profile))
        _ = try await fixture.waitForPacks(daemon, "levels after Low Power Mode") {
            $0["levels"]?["localVersion"] as? Int == 1
        }
        #expect(AssetPackTests.same(PackFixture.packPath(daemon, "levels") + "/levels/b.bin", levels))
        try await app.wait("the updates of levels to end", where: { $0.string("update") == "end" })
        let kinds = app.lines.filter { $0.string("follower") == "levels" }.compactMap { $0.string("update") }
        #expect(kinds.first == "began", "\(kinds)")  // going on after the pause
        #expect(kinds.suffix(2) == ["finished", "end"], "\(kinds)")
    }
}
