import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `probe` role of `hello` (docs/protocol.md, "Handshake"): a launcher names the app, lists
/// and follows its packs, and changes nothing; every other request is refused with 56 on the open
/// connection; an unregistered app is refused as for the app itself.
@Suite("a probe connection", .timeLimit(.minutes(2)))
struct ProbeRoleTests {
    /// The error code `work` throws, or nil when it succeeds.
    static func code(_ work: () throws -> Void) -> Int? {
        do {
            try work()
            return nil
        } catch {
            return (error as? DaemonClientError)?.code ?? -1
        }
    }

    @Test("lists and follows; subscribes, acknowledges, cancels, ensures nothing; the app stays unlaunched")
    func listsAndNothingElse() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try daemon.register("com.example.probed", group: "group.com.example.probed")
        let probe = try DaemonClient(
            socketPath: daemon.socketPath,
            client: ClientInfo(role: .probe, bundleIdentifier: "com.example.probed", pid: getpid()))
        defer { probe.close() }
        #expect(Self.code { _ = try probe.call(.status) } == nil)
        #expect(Self.code { _ = try probe.call(.packs(PackCommand(action: .list))) } == nil)
        #expect(Self.code { _ = try probe.call(.packs(PackCommand(action: .follow))) } == nil)
        for action in [PackCommand.Action.ensure, .remove, .cancel, .check, .verify] {
            #expect(
                Self.code { _ = try probe.call(.packs(PackCommand(action: action, pack: "levels"))) } == 56,
                "\(action)")
        }
        #expect(Self.code { _ = try probe.call(.subscribeEvents) } == 56)
        #expect(Self.code { _ = try probe.call(.acknowledgeEvents(throughSequence: 1)) } == 56)
        #expect(Self.code { _ = try probe.call(.cancel(identifier: "x")) } == 56)
        #expect(Self.code { _ = try probe.call(.startForeground(identifier: "x")) } == 56)
        // The connection is still open after the refusals.
        #expect(Self.code { _ = try probe.call(.packs(PackCommand(action: .list))) } == nil)

        let cli = try daemon.cliClient()
        defer { cli.close() }
        guard case .apps(let apps) = try cli.call(.listApps) else { throw HarnessError("listApps not answered") }
        #expect(apps.first { $0.bundleIdentifier == "com.example.probed" }?.launched == false)

        // An app basd does not know: refused at the hello, as the app would be.
        #expect(
            Self.code {
                _ = try DaemonClient(
                    socketPath: daemon.socketPath,
                    client: ClientInfo(role: .probe, bundleIdentifier: "com.example.unknown", pid: getpid()))
            } == 55)
    }
}
