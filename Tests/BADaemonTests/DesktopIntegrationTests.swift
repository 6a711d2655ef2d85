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
}
