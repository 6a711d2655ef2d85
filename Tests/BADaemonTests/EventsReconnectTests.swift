import BAAssetServer
import BACore
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `ba events --follow` across a basd restart, and `ba downloads --app` of an unknown app.
@Suite("ba events reconnects", .timeLimit(.minutes(2)))
struct EventsReconnectTests {
    static let app = "com.example.reconnect"

    static func register(_ daemon: DaemonProcess) throws {
        try daemon.register(app, group: "group.com.example.reconnect")
    }

    static func schedule(_ daemon: DaemonProcess, _ identifier: String, url: String) throws {
        let client = try daemon.appClient(app)
        defer { client.close() }
        try client.call(.schedule(DownloadDescription(identifier: identifier, url: url, fileSize: 5000)))
    }

    @Test("basd restarts: ba says so, waits, and follows the new basd; Ctrl-C still exits 0")
    func followsAcrossARestart() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        server.setFile("/a.bin", contents: [UInt8](repeating: 1, count: 5000))
        let directory = try TemporaryDirectory()
        var daemon = try await DaemonProcess.start(directory: directory)
        try Self.register(daemon)
        let socket = daemon.socketPath
        let events = try ChildProcess(
            BuildProducts.executable("ba"), ["events", "--follow", "--no-progress", "--socket", socket])
        defer { events.kill() }
        try events.wait("subscribed") { $0.stderr.contains("following events") }
        try Self.schedule(daemon, "first", url: server.url("/a.bin"))
        try events.wait("first finished") { $0.stdout.contains("  first  ") && $0.stdout.contains("  finished  ") }

        daemon.send(SIGTERM)
        #expect(daemon.waitForExit(timeout: 10) != nil)
        try events.wait("the loss reported") { $0.stderr.contains("waiting for it to come back") }
        daemon = try await DaemonProcess.start(directory: directory)
        defer { daemon.kill() }
        try events.wait("reconnected") { $0.stderr.contains("basd is back") }
        try Self.schedule(daemon, "second", url: server.url("/a.bin"))
        try events.wait("second finished") { $0.stdout.contains("  second  ") && $0.stdout.contains("  finished  ") }

        events.signal(SIGINT)
        #expect(events.waitForExit() == 0)
    }

    @Test("ba downloads --app of an app basd does not know is an error")
    func unknownApp() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let result = try await runProcess(
            BuildProducts.executable("ba"), ["downloads", "--app", "com.example.nobody", "--socket", daemon.socketPath])
        #expect(result.status == 33, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("com.example.nobody is not registered"), "\(result.stderr)")
    }
}
