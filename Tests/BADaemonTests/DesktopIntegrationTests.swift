import BAAssetServer
import BATestSupport
import Foundation
import Testing

@testable import BADaemon

/// basd on the desktop's D-Bus buses (real `dbus-daemon`s, stand-ins in Python: ``TestBus``):
/// without buses, one line each; launcher progress during `ba install`.
@Suite("Desktop integration", .timeLimit(.minutes(3)))
struct DesktopIntegrationTests {
    let ba = BuildProducts.executable("ba")

    @Test("no bus: one line for each, and basd serves as before; --no-desktop-bus: one line, no connection")
    func noBus() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let status = try await runProcess(ba, ["status", "--socket", daemon.socketPath])
        #expect(status.status == 0, "\(status.stderr)")
        let lines = daemon.standardError.split(separator: "\n")
        #expect(lines.count { $0.contains("desktop: no session bus") } == 1, "\(daemon.standardError)")
        #expect(lines.count { $0.contains("desktop: no system bus") } == 1, "\(daemon.standardError)")
        #expect(lines.contains { $0.contains("launcher progress is not shown") }, "\(daemon.standardError)")

        let off = try await DaemonProcess.start(arguments: ["--no-desktop-bus"])
        defer { off.kill() }
        #expect(off.standardError.contains("desktop: D-Bus integration is off"), "\(off.standardError)")
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
        // One essential download (a catalog padded to 512 KiB, still JSON), sent at 1 MiB/s: half
        // a second of progress whatever the machine's speed.
        let catalog = SampleAppFixture.catalog + [UInt8](repeating: UInt8(ascii: " "), count: 512 << 10)
        server.setBehavior(.trickle(bytesPerSecond: 1 << 20), for: "/catalog.json")
        let fixture = try SampleAppFixture(
            server: server,
            assets: [.init(identifier: "catalog", path: "/catalog.json", contents: catalog, essential: true)],
            plist: { $0["BADesktopEntry"] = "org.example.SampleGame.desktop" })
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start(environment: session.environment)
        defer { daemon.kill() }
        #expect(daemon.standardError.contains("desktop: connected to the session bus"), "\(daemon.standardError)")

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
}
