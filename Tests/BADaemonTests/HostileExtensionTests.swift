import BAAssetServer
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A hostile extension (`BATestEscape`) called by a real basd: everything it tries against basd,
/// the network and other apps is refused or contained, and basd keeps answering; a call never
/// outlives the basd that made it.
@Suite("hostile extensions through basd", .timeLimit(.minutes(3)))
struct HostileExtensionTests {
    let ba = BuildProducts.executable("ba")

    func run(_ daemon: DaemonProcess, _ arguments: [String]) async throws -> ProcessOutput {
        try await runProcess(ba, arguments + ["--socket", daemon.socketPath])
    }

    /// The app whose extension is BATestEscape, its manifest the `actions` (with `{S}` for basd's
    /// state folder, `{C}` for the app's container).
    func fixture(_ server: AssetServer, _ daemon: DaemonProcess, _ actions: [String]) throws -> SampleAppFixture {
        let container = daemon.stateDirectory + "/groups/" + SampleAppFixture.group
        let script = actions.map {
            $0.replacingOccurrences(of: "{S}", with: daemon.stateDirectory).replacingOccurrences(
                of: "{C}", with: container)
        }.joined(separator: "\n")
        return try SampleAppFixture(server: server, manifest: Array(script.utf8), extensionLibrary: "BATestEscape")
    }

    /// Whether process `pid` exists (and is not a zombie of ours).
    static func alive(_ pid: Int32) -> Bool {
        guard pid > 0, kill(pid, 0) == 0 else { return false }
        let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))?
            .split(separator: ")").last?.split(separator: " ").first
        return state != "Z"
    }

    static func pid(in path: String) -> Int32? {
        (try? String(contentsOfFile: path, encoding: .utf8)).flatMap {
            Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    @Test("network, basd's socket and state, another app's container, ptrace, setsid and setpgid daemons, a fork flood")
    func everythingIsRefusedOrContained() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let other = daemon.stateDirectory + "/groups/group.com.example.other"
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        let port = URLComponents(string: server.url("/"))?.port ?? 0
        let fixture = try fixture(
            server, daemon,
            [
                "connect-tcp 127.0.0.1 \(port)", "unix \(daemon.socketPath)", "read {S}/state.sqlite",
                "write \(other)/evil", "write {C}/inside", "ptrace", "daemon {C}/daemon.pid",
                "pgid-daemon {C}/pgid.pid", "fork-flood 300",
            ])
        defer { fixture.remove() }

        async let installed = run(daemon, ["install", fixture.appDirectory])
        // basd answers everyone while the call runs.
        let status = try await run(daemon, ["status", "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let install = try await installed
        #expect(install.stdout.contains("extension install: ok"), "\(install.stdout)\(install.stderr)")
        for refused in [
            "connect-tcp: refused", "unix: refused", "read: refused", "write: refused: Permission denied",
            "ptrace: refused",
        ] {
            #expect(await daemon.logged(refused), "\(refused): \(daemon.standardError)")
        }
        #expect(await daemon.logged("write: ok"), "the container stays writable: \(daemon.standardError)")
        #expect(!FileManager.default.fileExists(atPath: other + "/evil"))
        // The daemons it started ended with the call.
        for file in ["daemon.pid", "pgid.pid"] {
            let path = daemon.stateDirectory + "/groups/" + SampleAppFixture.group + "/" + file
            if let pid = Self.pid(in: path) {
                _ = try await CLIQueries.poll(
                    "\(file)'s process \(pid) gone", daemon, timeout: 10, read: { Self.alive(pid) }, until: { !$0 })
            }
        }
        let after = try await run(daemon, ["status", "--json"])
        #expect(after.status == 0, "\(after.stderr)")
    }

    /// basd killed (SIGKILL, SIGTERM) in the middle of a call that hangs: the call's processes go
    /// with it, and the next basd starts and serves.
    @Test("a call does not outlive basd", arguments: [SIGKILL, SIGTERM])
    func callEndsWithBasd(signal: Int32) async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let daemon = try await DaemonProcess.start(directory: directory)
        let fixture = try fixture(server, daemon, ["pid {C}/call.pid", "daemon {C}/daemon.pid", "hang"])
        defer { fixture.remove() }
        async let installed = run(daemon, ["install", fixture.appDirectory])
        let container = daemon.stateDirectory + "/groups/" + SampleAppFixture.group
        let pids = try await CLIQueries.poll(
            "the call's pids", daemon, timeout: 30,
            read: { [Self.pid(in: container + "/call.pid"), Self.pid(in: container + "/daemon.pid")] },
            until: { $0.allSatisfy { $0 != nil } }
        ).compactMap { $0 }
        daemon.send(signal)
        #expect(daemon.waitForExit(timeout: 10) != nil)
        _ = try await installed
        for pid in pids {
            _ = try await CLIQueries.poll(
                "the call's process \(pid) gone after basd's \(signal)", daemon, timeout: 10, read: { Self.alive(pid) },
                until: { !$0 })
        }
        let next = try await DaemonProcess.start(directory: directory)
        defer { next.kill() }
        let status = try await run(next, ["status", "--json"])
        #expect(status.status == 0, "\(status.stderr)")
    }

    /// The `extensionSandbox` setting off (for debugging an extension): the same connect works,
    /// and basd's log says loudly that the call ran without the sandbox.
    @Test("extensionSandbox off: the call is not confined, and basd warns")
    func sandboxOff() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/state", withIntermediateDirectories: true)
        try Data(#"{"extensionSandbox": false}"#.utf8).write(
            to: URL(fileURLWithPath: directory.path + "/state/config.json"))
        let daemon = try await DaemonProcess.start(directory: directory)
        defer { daemon.kill() }
        let port = URLComponents(string: server.url("/"))?.port ?? 0
        let fixture = try fixture(server, daemon, ["connect-tcp 127.0.0.1 \(port)"])
        defer { fixture.remove() }
        let install = try await run(daemon, ["install", fixture.appDirectory])
        #expect(install.stdout.contains("extension install: ok"), "\(install.stdout)\(install.stderr)")
        #expect(await daemon.logged("connect-tcp: ok"), "\(daemon.standardError)")
        #expect(await daemon.logged("WITHOUT the sandbox"), "\(daemon.standardError)")
    }
}
