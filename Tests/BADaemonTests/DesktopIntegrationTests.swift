import BAAssetServer
import BACore
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

@testable import BADaemon

/// basd on the desktop's D-Bus buses (real `dbus-daemon`s, stand-ins in Python: ``TestBus``):
/// without buses, one line each; launcher progress during `ba install`.
///
/// One test at a time: each runs its own `dbus-daemon`s, and every `dbus-daemon` takes one of the
/// user's inotify instances (128 by default), which basds running beside them need too.
@Suite("Desktop integration", .serialized, .timeLimit(.minutes(3)))
struct DesktopIntegrationTests {
    let ba = BuildProducts.executable("ba")

    @Test("no bus: one line for each, and basd serves as before; --no-desktop-bus: one line, no connection")
    func noBus() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let status = try await runProcess(ba, ["status", "--socket", daemon.socketPath])
        #expect(status.status == 0, "\(status.stderr)")
        for line in ["desktop: no session bus", "desktop: no system bus", "launcher progress is not shown"] {
            #expect(await daemon.logged(line), "\(daemon.standardError)")
        }
        let lines = daemon.standardError.split(separator: "\n")
        #expect(lines.count { $0.contains("desktop: no session bus") } == 1, "\(daemon.standardError)")
        #expect(lines.count { $0.contains("desktop: no system bus") } == 1, "\(daemon.standardError)")
        #expect(lines.contains { $0.contains("launcher progress is not shown") }, "\(daemon.standardError)")

        let off = try await DaemonProcess.start(arguments: ["--no-desktop-bus"])
        defer { off.kill() }
        #expect(await off.logged("desktop: D-Bus integration is off"), "\(off.standardError)")
        #expect(!off.standardError.contains("desktop: no session bus"), "\(off.standardError)")
    }

    @Test("ba install: the launcher shows the essential download's progress rising to 1.0, then clears it")
    func launcherProgressDuringInstall() async throws {
        try #require(TestBus.available, Comment(rawValue: TestBus.unavailableReason ?? ""))
        let session = try TestBus(.session)
        defer { session.stop() }
        let listener = try session.standIn(BusStandIn.listener(interface: "com.canonical.Unity.LauncherEntry"))
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        // One essential download (a catalog padded to 512 KiB, still JSON), sent at 256 KiB/s: two
        // seconds of progress whatever the machine's speed (a basd held off the CPU for a moment
        // still sees it arrive in several reads, so the launcher gets a step between 0 and 1).
        let catalog = SampleAppFixture.catalog + [UInt8](repeating: UInt8(ascii: " "), count: 512 << 10)
        server.setBehavior(.trickle(bytesPerSecond: 256 << 10), for: "/catalog.json")
        let fixture = try SampleAppFixture(
            server: server,
            assets: [.init(identifier: "catalog", path: "/catalog.json", contents: catalog, essential: true)],
            plist: { $0["BADesktopEntry"] = "org.example.SampleGame.desktop" })
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start(environment: session.environment)
        defer { daemon.kill() }
        try await Self.logged(daemon, "desktop: connected to the session bus")

        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        try await listener.waiting("the launcher entry to be cleared", timeout: 30) { child in
            child.jsonLines.contains {
                ($0["args"] as? [Any])?.last.flatMap { $0 as? [String: Any] }?["progress-visible"] as? Bool == false
            }
        }
        let updates = listener.jsonLines.compactMap { line -> [String: Any]? in
            guard line["member"] as? String == "Update", let arguments = line["args"] as? [Any],
                arguments.first as? String == "application://org.example.SampleGame.desktop"
            else { return nil }
            #expect((line["path"] as? String)?.hasPrefix("/com/canonical/unity/launcherentry/") == true)
            return arguments.last as? [String: Any]
        }
        let progress = updates.compactMap { $0["progress"] as? Double }
        #expect(progress.count == updates.count && updates.count >= 3, "\(updates)")
        #expect(progress == progress.sorted(), "rising: \(progress)")
        #expect(progress.contains { $0 > 0 && $0 < 1 }, "a step between: \(progress)")
        #expect(updates.dropLast().allSatisfy { $0["progress-visible"] as? Bool == true }, "\(updates)")
        #expect(updates.dropLast().last?["progress"] as? Double == 1.0, "\(updates)")
        #expect(updates.last?["progress-visible"] as? Bool == false, "\(updates)")
        #expect(updates.last?["urgent"] as? Bool == false, "\(updates)")
    }

    @Test("ba install of an app with an essential asset pack: its install shows on the launcher until done")
    func launcherProgressOfAPack() async throws {
        try #require(TestBus.available, Comment(rawValue: TestBus.unavailableReason ?? ""))
        let session = try TestBus(.session)
        defer { session.stop() }
        let listener = try session.standIn(BusStandIn.listener(interface: "com.canonical.Unity.LauncherEntry"))
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        try fixture.write(
            pack: "base", policy: PackFixture.essential, files: ["a.bin": PackFixture.random(1 << 20, seed: 7)])
        try await fixture.publish(["base"], version: 1)
        let daemon = try await DaemonProcess.start(environment: session.environment)
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        let updates = try await Self.updates(listener, uri: "application://\(PackFixture.app).desktop")
        let progress = updates.compactMap { $0["progress"] as? Double }
        #expect(progress == progress.sorted(), "rising: \(progress)")
        #expect(updates.first?["progress-visible"] as? Bool == true, "\(updates)")
        #expect(updates.dropLast().last?["progress"] as? Double == 1.0, "\(updates)")
        #expect(updates.last?["progress-visible"] as? Bool == false, "\(updates)")
    }

    /// The launcher entry's properties sent for `uri`, once it was cleared (waited for).
    static func updates(_ listener: ChildProcess, uri: String) async throws -> [[String: Any]] {
        func updates() -> [[String: Any]] {
            listener.jsonLines.compactMap { line -> [String: Any]? in
                guard line["member"] as? String == "Update", let arguments = line["args"] as? [Any],
                    arguments.first as? String == uri
                else { return nil }
                return arguments.last as? [String: Any]
            }
        }
        try await listener.waiting("the launcher entry of \(uri) to be cleared", timeout: 30) { _ in
            updates().contains { $0["progress-visible"] as? Bool == false }
        }
        return updates()
    }

    /// A basd on a private system bus whose NetworkManager stand-in says `metered` (1 yes, 2 no),
    /// with `settings` in its config.json, once it has heard NetworkManager.
    static func daemonOnNetwork(
        _ system: TestBus, metered: UInt32, settings: String
    ) async throws -> (DaemonProcess, manager: ChildProcess) {
        let manager = try system.standIn(BusStandIn.networkManager(metered: metered))
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/state", withIntermediateDirectories: true)
        try Data(settings.utf8).write(to: URL(fileURLWithPath: directory.path + "/state/config.json"))
        let daemon = try await DaemonProcess.start(directory: directory, environment: system.environment)
        _ = try await CLIQueries.poll(
            "basd to hear NetworkManager", daemon, timeout: 20, read: { daemon.standardError },
            until: { $0.contains("network: \(metered == 1 ? "metered" : "not metered")") })
        return (daemon, manager)
    }

    static func setMetered(_ manager: ChildProcess, _ value: UInt32) throws {
        manager.send(BusStandIn.metered(value))
    }

    /// Waits (bounded) until basd's log has `text`: its standard error is read from a pipe as it
    /// comes, so a line basd wrote before an event the test saw elsewhere (a stand-in's output, a
    /// listing) may not have been read yet when the test looks.
    static func logged(_ daemon: DaemonProcess, _ text: String) async throws {
        _ = try await CLIQueries.poll(
            "basd to log \"\(text)\"", daemon, timeout: 20, read: { daemon.standardError },
            until: { $0.contains(text) })
    }

    static func row(_ rows: [[String: Any]], _ identifier: String) -> [String: Any]? {
        rows.first { $0["identifier"] as? String == identifier }
    }

    @Test("metered: a download whose request disallows expensive networks waits, saying so, and starts once it is not")
    func meteredNetworkHoldsANonExpensiveDownload() async throws {
        try #require(TestBus.available, Comment(rawValue: TestBus.unavailableReason ?? ""))
        let system = try TestBus(.system)
        defer { system.stop() }
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        server.setFile("/held.bin", contents: SampleAppFixture.bytes(100_000, seed: 1))
        server.setFile("/free.bin", contents: SampleAppFixture.bytes(100_000, seed: 2))
        // Background downloads that allow a metered network go on (the setting off): only the
        // request's own flag holds "held".
        let (daemon, manager) = try await Self.daemonOnNetwork(
            system, metered: 1, settings: #"{"waitOnMeteredNetwork": false}"#)
        defer { daemon.kill() }
        let app = "com.example.metered"
        try daemon.register(app, group: "group.com.example.metered")
        let client = try daemon.appClient(app)
        defer { client.close() }
        try client.call(
            .schedule(
                DownloadDescription(
                    identifier: "held", url: server.url("/held.bin"), allowsExpensiveNetworkAccess: false)))
        try client.call(.schedule(DownloadDescription(identifier: "free", url: server.url("/free.bin"))))

        let waiting = try await CLIQueries.pollDownloads(
            "free to finish while held waits for the metered network", daemon, app: app, timeout: 30,
            until: { rows in
                Self.row(rows, "free")?["state"] as? String == "finished"
                    && Self.row(rows, "held")?["waitingFor"] as? String == "meteredNetwork"
            })
        #expect(Self.row(waiting, "held")?["state"] as? String != "finished", "\(waiting)")
        #expect(Self.row(waiting, "held")?["bytesOnDisk"] as? Int == 0, "\(waiting)")
        #expect(server.requests.filter { $0.path == "/held.bin" }.isEmpty)

        try Self.setMetered(manager, 2)
        let done = try await CLIQueries.pollDownloads(
            "held to finish once the network is not metered", daemon, app: app, timeout: 30,
            until: { Self.row($0, "held")?["state"] as? String == "finished" })
        #expect(Self.row(done, "held")?["waitingFor"] == nil, "\(done)")
        try await Self.logged(daemon, "network: not metered")
    }

    @Test("metered, by default: a background download waits; the setting off, it goes")
    func meteredNetworkHoldsBackgroundDownloads() async throws {
        try #require(TestBus.available, Comment(rawValue: TestBus.unavailableReason ?? ""))
        let system = try TestBus(.system)
        defer { system.stop() }
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        server.setFile("/a.bin", contents: SampleAppFixture.bytes(50_000, seed: 3))
        let (daemon, _) = try await Self.daemonOnNetwork(system, metered: 1, settings: "{}")
        defer { daemon.kill() }
        let app = "com.example.metered"
        try daemon.register(app, group: "group.com.example.metered")
        let client = try daemon.appClient(app)
        defer { client.close() }
        try client.call(.schedule(DownloadDescription(identifier: "a", url: server.url("/a.bin"))))
        _ = try await CLIQueries.pollDownloads(
            "a to wait for the metered network", daemon, app: app, timeout: 30,
            until: { Self.row($0, "a")?["waitingFor"] as? String == "meteredNetwork" })
        let text = try await runProcess(ba, ["downloads", "--app", app, "--socket", daemon.socketPath])
        #expect(text.stdout.contains("waiting for meteredNetwork"), "\(text.stdout)")

        // The setting off (an edit applies at once): it goes.
        let config = daemon.stateDirectory + "/config.json"
        try Data(#"{"waitOnMeteredNetwork": false, "allowedHosts": ["127.0.0.1", "localhost", "::1"]}"#.utf8)
            .write(to: URL(fileURLWithPath: config + ".new"))
        _ = rename(config + ".new", config)
        _ = try await CLIQueries.pollDownloads(
            "a to finish with the setting off", daemon, app: app, timeout: 30,
            until: { Self.row($0, "a")?["state"] as? String == "finished" })
    }

    @Test("behind a captive portal a background download waits without burning attempts; full connectivity, it goes")
    func captivePortal() async throws {
        try #require(TestBus.available, Comment(rawValue: TestBus.unavailableReason ?? ""))
        let system = try TestBus(.system)
        defer { system.stop() }
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        server.setFile("/a.bin", contents: SampleAppFixture.bytes(50_000, seed: 4))
        let manager = try system.standIn(BusStandIn.networkManager(metered: 2, connectivity: 2))
        let daemon = try await DaemonProcess.start(environment: system.environment)
        defer { daemon.kill() }
        _ = try await CLIQueries.poll(
            "basd to hear the portal", daemon, timeout: 20, read: { daemon.standardError },
            until: { $0.contains("connectivity portal") })
        let app = "com.example.portal"
        try daemon.register(app, group: "group.com.example.portal")
        let client = try daemon.appClient(app)
        defer { client.close() }
        try client.call(.schedule(DownloadDescription(identifier: "a", url: server.url("/a.bin"))))
        let waiting = try await CLIQueries.pollDownloads(
            "a to wait behind the captive portal", daemon, app: app, timeout: 30,
            until: { Self.row($0, "a")?["waitingFor"] as? String == "captivePortal" })
        #expect(Self.row(waiting, "a")?["attempts"] as? Int ?? 0 == 0, "\(waiting)")
        #expect(server.requests(for: "/a.bin").isEmpty)

        manager.send(
            BusStandIn.set(
                path: "/org/freedesktop/NetworkManager", interface: "org.freedesktop.NetworkManager",
                name: "Connectivity", type: "u", value: 4))
        _ = try await CLIQueries.pollDownloads(
            "a to finish with full connectivity", daemon, app: app, timeout: 30,
            until: { Self.row($0, "a")?["state"] as? String == "finished" })
    }

    /// Sets `ActiveProfile` on the stand-in's objects (both names, as power-profiles-daemon's one
    /// object is under both).
    static func setProfile(_ standIn: ChildProcess, _ profile: String, legacyOnly: Bool = false) throws {
        let names =
            legacyOnly
            ? ["net.hadess.PowerProfiles"] : ["org.freedesktop.UPower.PowerProfiles", "net.hadess.PowerProfiles"]
        for name in names {
            standIn.send(
                BusStandIn.set(
                    path: "/" + name.replacingOccurrences(of: ".", with: "/"), interface: name, name: "ActiveProfile",
                    type: "s", value: profile))
        }
    }

    @Test("lowPowerModeOnBattery: on battery (UPower) a background download waits for Low Power Mode; on AC it goes")
    func onBattery() async throws {
        try #require(TestBus.available, Comment(rawValue: TestBus.unavailableReason ?? ""))
        let system = try TestBus(.system)
        defer { system.stop() }
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        // Held after its first 64 KiB until Low Power Mode takes it off the wire.
        server.setFile("/a.bin", contents: SampleAppFixture.bytes(600_000, seed: 6))
        server.setBehavior(.stall(afterBytes: 64 << 10), for: "/a.bin")
        let upower = try system.standIn(BusStandIn.upower(onBattery: false))
        let directory = try TemporaryDirectory()
        let daemon = try await DaemonProcess.start(directory: directory, environment: system.environment)
        defer { daemon.kill() }
        let app = "com.example.battery"
        try daemon.register(app, group: "group.com.example.battery")
        let client = try daemon.appClient(app)
        defer { client.close() }
        try client.call(.schedule(DownloadDescription(identifier: "a", url: server.url("/a.bin"))))
        _ = try await CLIQueries.pollDownloads(
            "a to start", daemon, app: app, timeout: 30, until: { (Self.row($0, "a")?["bytesOnDisk"] as? Int ?? 0) > 0 }
        )
        // On battery (without the setting the profile alone decides), then the setting on.
        upower.send(
            BusStandIn.set(
                path: "/org/freedesktop/UPower", interface: "org.freedesktop.UPower", name: "OnBattery", type: "b",
                value: true))
        _ = try upower.waitForOutput(containing: "set OnBattery")
        // The setting on (an edit of the file basd reads applies at once): Low Power Mode.
        let config = directory.path + "/config/background-assets/config.json"
        try Data(#"{"lowPowerModeOnBattery": true, "allowedHosts": ["127.0.0.1", "localhost", "::1"]}"#.utf8)
            .write(to: URL(fileURLWithPath: config + ".new"))
        _ = rename(config + ".new", config)
        _ = try await CLIQueries.pollDownloads(
            "a to wait for Low Power Mode", daemon, app: app, timeout: 30,
            until: { Self.row($0, "a")?["waitingFor"] as? String == "lowPowerMode" })
        try await Self.logged(
            daemon, "Low Power Mode is on (on battery (UPower), with the lowPowerModeOnBattery setting)")

        // Back on AC: it goes on and finishes.
        server.setBehavior(nil, for: "/a.bin")
        upower.send(
            BusStandIn.set(
                path: "/org/freedesktop/UPower", interface: "org.freedesktop.UPower", name: "OnBattery", type: "b",
                value: false))
        let done = try await CLIQueries.pollDownloads(
            "a to finish on AC", daemon, app: app, timeout: 30,
            until: { Self.row($0, "a")?["state"] as? String == "finished" })
        #expect(Self.row(done, "a")?["waitingFor"] == nil, "\(done)")
    }

    @Test(
        "power-profiles-daemon's power-saver holds a background download at once, balanced lets it go; over the file",
        arguments: [false, true])
    func powerProfileOverTheBus(legacyOnly: Bool) async throws {
        try #require(TestBus.available, Comment(rawValue: TestBus.unavailableReason ?? ""))
        let system = try TestBus(.system)
        defer { system.stop() }
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        // Held after its first 64 KiB until Low Power Mode takes it off the wire: it cannot
        // finish before, however slow the machine.
        server.setFile("/a.bin", contents: SampleAppFixture.bytes(600_000, seed: 5))
        server.setBehavior(.stall(afterBytes: 64 << 10), for: "/a.bin")
        let profiles = try system.standIn(BusStandIn.powerProfiles("balanced", legacyOnly: legacyOnly))
        // The file says power-saver: the bus decides while power-profiles-daemon is on it.
        let directory = try TemporaryDirectory()
        let file = try directory.write("profile", "power-saver\n")
        let daemon = try await DaemonProcess.start(
            directory: directory, environment: system.environment.merging(["BASD_POWER_PROFILE_FILE": file]) { $1 })
        defer { daemon.kill() }
        let app = "com.example.power"
        try daemon.register(app, group: "group.com.example.power")
        let client = try daemon.appClient(app)
        defer { client.close() }
        try client.call(.schedule(DownloadDescription(identifier: "a", url: server.url("/a.bin"))))
        _ = try await CLIQueries.pollDownloads(
            "a to start", daemon, app: app, timeout: 30, until: { (Self.row($0, "a")?["bytesOnDisk"] as? Int ?? 0) > 0 }
        )
        // (Until power-profiles-daemon answered, the file may have said power-saver for a moment.)

        try Self.setProfile(profiles, "power-saver", legacyOnly: legacyOnly)
        _ = try await CLIQueries.pollDownloads(
            "a to wait for Low Power Mode", daemon, app: app, timeout: 30,
            until: { Self.row($0, "a")?["waitingFor"] as? String == "lowPowerMode" })
        try await Self.logged(daemon, "Low Power Mode is on (power profile power-saver (power-profiles-daemon))")

        server.setBehavior(nil, for: "/a.bin")
        try Self.setProfile(profiles, "balanced", legacyOnly: legacyOnly)
        let done = try await CLIQueries.pollDownloads(
            "a to finish once balanced", daemon, app: app, timeout: 30,
            until: { Self.row($0, "a")?["state"] as? String == "finished" })
        #expect(Self.row(done, "a")?["waitingFor"] == nil, "\(done)")
        try await Self.logged(daemon, "Low Power Mode is off")
    }

    @Test(
        "logind that comes onto the system bus after basd gets basd's sleep inhibitor, and its suspend is checkpointed")
    func logindLater() async throws {
        try #require(TestBus.available, Comment(rawValue: TestBus.unavailableReason ?? ""))
        let system = try TestBus(.system)
        defer { system.stop() }
        let daemon = try await DaemonProcess.start(environment: system.environment)
        defer { daemon.kill() }
        _ = try await CLIQueries.poll(
            "basd to find no logind", daemon, timeout: 20, read: { daemon.standardError },
            until: { $0.contains("desktop: no sleep inhibitor") })
        let logind = try system.standIn(BusStandIn.logind)
        try await logind.waiting("basd's delay inhibitor from the new logind", timeout: 20) {
            $0.stdoutLines.contains("inhibited 1 sleep delay")
        }
        try await Self.logged(daemon, "desktop: logind is on the system bus")
        logind.send(BusStandIn.sleep(true))
        try await logind.waiting("basd to release its inhibitor", timeout: 20) {
            $0.stdoutLines.contains("released 1")
        }
    }

    @Test(
        "logind: before a suspend the transfers are checkpointed and the delay inhibitor released; after the resume they go on at once"
    )
    func suspendAndResume() async throws {
        try #require(TestBus.available, Comment(rawValue: TestBus.unavailableReason ?? ""))
        let system = try TestBus(.system)
        defer { system.stop() }
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let contents = SampleAppFixture.bytes(800_000, seed: 6)
        server.setFile("/a.bin", contents: contents)
        // Held after its first 64 KiB until the suspend takes it off the wire.
        server.setBehavior(.stall(afterBytes: 64 << 10), for: "/a.bin")
        let logind = try system.standIn(BusStandIn.logind)
        let daemon = try await DaemonProcess.start(environment: system.environment)
        defer { daemon.kill() }
        try await logind.waiting("basd's delay inhibitor", timeout: 20) {
            $0.stdoutLines.contains("inhibited 1 sleep delay")
        }
        let app = "com.example.sleep"
        try daemon.register(app, group: "group.com.example.sleep")
        let client = try daemon.appClient(app)
        defer { client.close() }
        try client.call(.schedule(DownloadDescription(identifier: "a", url: server.url("/a.bin"))))
        _ = try await CLIQueries.pollDownloads(
            "a to start", daemon, app: app, timeout: 30, until: { (Self.row($0, "a")?["bytesOnDisk"] as? Int ?? 0) > 0 }
        )

        // Suspend: basd checkpoints, then lets go of its inhibitor (logind would wait 5 s at most).
        logind.send(BusStandIn.sleep(true))
        try await logind.waiting("basd to release its inhibitor", timeout: 20) {
            $0.stdoutLines.contains("released 1")
        }
        try await Self.logged(daemon, "sleep: transfers checkpointed")
        let requestsBefore = server.requests(for: "/a.bin").count
        #expect(requestsBefore == 1)

        // Resume: a new inhibitor, and the download goes on from where it was, at once.
        server.setBehavior(nil, for: "/a.bin")
        logind.send(BusStandIn.sleep(false))
        try await logind.waiting("basd's next inhibitor", timeout: 20) {
            $0.stdoutLines.contains("inhibited 2 sleep delay")
        }
        _ = try await CLIQueries.pollDownloads(
            "a to finish after the resume", daemon, app: app, timeout: 30,
            until: { Self.row($0, "a")?["state"] as? String == "finished" })
        let resumed = try #require(server.requests(for: "/a.bin").last)
        #expect(server.requests(for: "/a.bin").count == requestsBefore + 1)
        #expect(resumed.header("Range")?.hasPrefix("bytes=") == true, "resumed, not started over")
        #expect(resumed.header("Range") != "bytes=0-")
        try await Self.logged(daemon, "sleep: the machine woke; transfers go on")
    }
}
