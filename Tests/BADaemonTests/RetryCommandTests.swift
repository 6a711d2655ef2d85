import BAAssetServer
import BACore
import BADaemonProtocol
import BATestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `ba retry` and the visible retry wait: a real basd, `ba` as a process, loopback servers.
@Suite("ba retry", .timeLimit(.minutes(3)))
struct RetryCommandTests {
    static let app = "com.example.retry"
    let ba = BuildProducts.executable("ba")

    static func register(_ daemon: DaemonProcess) throws {
        try daemon.register(app, group: "group.com.example.retry")
    }

    static func schedule(_ daemon: DaemonProcess, _ identifier: String, url: String) throws -> String {
        let client = try daemon.appClient(app)
        defer { client.close() }
        guard
            case .downloads(let infos) = try client.call(
                .schedule(DownloadDescription(identifier: identifier, url: url)))
        else { throw HarnessError("schedule did not answer downloads") }
        return try #require(infos.first?.uniqueIdentifier)
    }

    func row(_ daemon: DaemonProcess, _ identifier: String) async throws -> [String: Any]? {
        try await CLIQueries.downloadRows(daemon, app: Self.app).first { $0["identifier"] as? String == identifier }
    }

    /// A loopback port nothing listens on: a privileged one, so no test server (they bind
    /// ephemeral ports) can take it meanwhile, a different one for each call (the tests start
    /// servers on them later), checked to refuse connections.
    static func closedPort() throws -> Int {
        while true {
            let port = nextClosedPort.withLock { port in
                defer { port += 1 }
                return port
            }
            guard port < 1000 else { break }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let refused = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) != 0 && errno == ECONNREFUSED
                }
            }
            if refused { return port }
        }
        throw HarnessError("every candidate privileged loopback port accepts connections")
    }

    private static let nextClosedPort = Mutex(900)

    @Test("a failed download is requeued by ba retry and finishes; a finished one cannot be retried")
    func retryAFailedDownload() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try Self.register(daemon)
        let id = try Self.schedule(daemon, "level", url: server.url("/level.bin"))
        let failed = try await CLIQueries.poll(
            "the 404 to fail the download", daemon, timeout: 20, read: { try await row(daemon, "level") },
            until: { $0?["state"] as? String == "failed" })
        let failure = failed?["errorMessage"] as? String ?? ""
        #expect(failure.contains("404"), "\(failed ?? [:])")

        server.setFile("/level.bin", contents: [UInt8](repeating: 7, count: 10_000))
        let retry = try await runProcess(ba, ["retry", String(id.prefix(8)), "--socket", daemon.socketPath])
        #expect(retry.status == 0, "\(retry.stdout)\(retry.stderr)")
        #expect(retry.stdout.contains("retrying \(id)"), "\(retry.stdout)")
        let finished = try await CLIQueries.poll(
            "the retried download to finish", daemon, timeout: 20, read: { try await row(daemon, "level") },
            until: { $0?["state"] as? String == "finished" })
        #expect(finished?["bytesOnDisk"] as? Int == 10_000)

        let again = try await runProcess(ba, ["retry", id, "--socket", daemon.socketPath])
        #expect(again.status == 32, "\(again.stdout)\(again.stderr)")
    }

    @Test("an unreachable server: waiting for the server with the last error and the next try; ba retry starts it now")
    func retryCutsTheWaitShort() async throws {
        let port = try Self.closedPort()
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try Self.register(daemon)
        let url = "http://127.0.0.1:\(port)/asset.bin"
        let id = try Self.schedule(daemon, "asset", url: url)
        // Wait until the next attempt is far enough away that it cannot explain a quick finish.
        let waiting = try await CLIQueries.poll(
            "a retry wait of more than 5 s", daemon, timeout: 90, read: { try await row(daemon, "asset") },
            until: { row in
                guard row?["waitingFor"] as? String == "server", let next = row?["nextAttemptAt"] as? Double else {
                    return false
                }
                return next - Date().timeIntervalSince1970 > 5
            })
        let lastError = waiting?["errorMessage"] as? String ?? ""
        #expect(lastError.contains("127.0.0.1:\(port)"), "\(waiting ?? [:])")
        #expect(waiting?["state"] as? String != "failed")
        let text = try await runProcess(ba, ["downloads", "--app", Self.app, "--socket", daemon.socketPath])
        #expect(text.stdout.contains("(waiting for server until "), "\(text.stdout)")

        // The server comes up on that port; ba retry does not wait for the backoff.
        let server = try await AssetServer.start(port: port)
        defer { Task { try? await server.shutdown() } }
        server.setFile("/asset.bin", contents: [UInt8](repeating: 3, count: 4096))
        let started = Date()
        let retry = try await runProcess(ba, ["retry", id, "--socket", daemon.socketPath])
        #expect(retry.status == 0, "\(retry.stdout)\(retry.stderr)")
        _ = try await CLIQueries.poll(
            "the download to finish", daemon, timeout: 20, read: { try await row(daemon, "asset") },
            until: { $0?["state"] as? String == "finished" })
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test("an install whose manifest could not be fetched is tried again by basd itself")
    func manifestFetchRetried() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(identifier: "catalog", path: "/catalog.json", contents: SampleAppFixture.catalog, essential: true)
            ])
        defer { fixture.remove() }
        let port = try Self.closedPort()
        try fixture.editInfoPlist { $0["BAManifestURL"] = "http://127.0.0.1:\(port)/manifest.json" }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 20, "\(install.stdout)\(install.stderr)")
        #expect(install.stdout.contains("basd tries again in 5 s by itself"), "\(install.stdout)")
        let retry = try await CLIQueries.app(daemon)["manifestRetry"] as? String ?? ""
        #expect(retry.hasPrefix("install: the manifest could not be fetched ("), "\(retry)")
        #expect(retry.contains(" time(s), next at "), "\(retry)")

        // The manifest's server comes up; nobody asks again, basd does.
        let manifestServer = try await AssetServer.start(port: port)
        defer { Task { try? await manifestServer.shutdown() } }
        let manifest = try JSONSerialization.data(
            withJSONObject: [
                "applicationGroupIdentifier": SampleAppFixture.group,
                "assets": [
                    [
                        "identifier": "catalog", "url": server.url("/catalog.json"),
                        "fileSize": SampleAppFixture.catalog.count, "essential": true,
                    ]
                ],
            ])
        manifestServer.setFile("/manifest.json", contents: Array(manifest))
        let rows = try await CLIQueries.pollDownloads(
            "the install to be retried and its catalog to finish", daemon, app: SampleAppFixture.bundleIdentifier,
            timeout: 30,
            until: { rows in
                rows.contains { $0["identifier"] as? String == "catalog" && $0["state"] as? String == "finished" }
            })
        #expect(rows.count == 1, "\(rows)")
        #expect(await daemon.logged("fetching its manifest again for install"), "\(daemon.standardError)")
    }

    @Test("a cancel leaves a trace: an event for ba events, and a second ba cancel says when and by whom")
    func cancelTrace() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        server.setFile("/slow.bin", contents: [UInt8](repeating: 1, count: 1 << 20))
        server.setBehavior(.trickle(bytesPerSecond: 64 << 10), for: "/slow.bin")
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try Self.register(daemon)
        let events = try ChildProcess(
            BuildProducts.executable("ba"), ["events", "--follow", "--json", "--socket", daemon.socketPath])
        defer { events.kill() }
        try events.wait("subscribed") { $0.stderr.contains("following events") }
        let id = try Self.schedule(daemon, "slow", url: server.url("/slow.bin"))
        let cancel = try await runProcess(ba, ["cancel", id, "--socket", daemon.socketPath])
        #expect(cancel.status == 0, "\(cancel.stdout)\(cancel.stderr)")
        try events.wait("the cancel's event") { $0.stdout.contains(#""errorCode":-999"#) }
        #expect(events.stdout.contains("cancelled by ba cancel"), "\(events.stdout)")
        let again = try await runProcess(ba, ["cancel", id, "--socket", daemon.socketPath])
        #expect(again.status == 32, "\(again.stdout)\(again.stderr)")
        #expect(again.stderr.contains("was cancelled by ba cancel at"), "\(again.stderr)")
        #expect(await daemon.logged("cancelled by ba cancel"), "\(daemon.standardError)")
    }
}
