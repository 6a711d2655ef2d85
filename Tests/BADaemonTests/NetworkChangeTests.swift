import BACore
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A network that comes back: basd in a network namespace of its own whose loopback is down, a
/// download waiting to retry, then `ip link set lo up`: the netlink event starts it at once.
@Suite(
    "network changes", .timeLimit(.minutes(2)),
    .enabled(if: NetworkNamespace.isAvailable, "needs unshare --net, nsenter and ip (a network namespace)"))
struct NetworkChangeTests {
    static let app = "com.example.netns"

    @Test("a download waiting for the network starts within a second of the network coming up")
    func linkUpCutsTheWaitShort() async throws {
        let daemon = try await DaemonProcess.start(
            launcher: [NetworkNamespace.unshare, "--user", "--map-root-user", "--net", "--"])
        defer { daemon.kill() }
        let directory = daemon.directory

        // Registered, and a download from a server in the namespace, unreachable while lo is down.
        let root = directory.path + "/www"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try Data(repeating: 9, count: 8192).write(to: URL(fileURLWithPath: root + "/a.bin"))
        try daemon.register(Self.app, version: "1", group: "group.com.example.netns")
        let cli = try daemon.cliClient()
        defer { cli.close() }
        let app = try daemon.appClient(Self.app)
        defer { app.close() }
        try app.call(.schedule(DownloadDescription(identifier: "a", url: "http://127.0.0.1:8080/a.bin")))

        // The server listens in the namespace (on any address: lo has none yet).
        let server = try ChildProcess(
            NetworkNamespace.nsenter,
            [
                "--target", "\(daemon.pid)", "--net", "--", BuildProducts.executable("ba-asset-server"),
                "--root", root, "--host", "0.0.0.0", "--port", "8080",
            ])
        defer { server.kill() }

        // Waiting, with the next attempt far enough off that only the network change explains a
        // quick finish.
        func download() throws -> DownloadInfo? {
            guard case .downloads(let infos) = try cli.call(.listDownloads(app: Self.app)) else { return nil }
            return infos.first
        }
        var waitingUntil = 0.0
        // (8 s: starting nsenter and ip on a loaded machine takes seconds.)
        try await waitUntil("a retry wait of more than 8 s", timeout: 90) {
            guard let info = try download(), info.waitingFor == "server", let next = info.nextAttemptAt else {
                return false
            }
            waitingUntil = next
            return next - Date().timeIntervalSince1970 > 8
        }

        let up = try await runProcess(
            NetworkNamespace.nsenter,
            [
                "--target", "\(daemon.pid)", "--net", "--", NetworkNamespace.ip,
                "link", "set", "lo", "up",
            ])
        #expect(up.status == 0, "\(up.stderr)")
        try await waitUntil("the download to finish", timeout: 60) { try download()?.state == .finished }
        // basd's own time of its reaction, from its log line, not when this test saw the end (a
        // loaded machine took 15 s more to show it): the retry came from the network change,
        // before the backoff's next attempt.
        #expect(await daemon.logged("the network changed: 1 transfer(s) waiting to retry try again now"))
        let log = daemon.standardError
        let changed = log.split(separator: "\n").first {
            $0.contains("the network changed: 1 transfer(s) waiting to retry try again now")
        }
        let line = try #require(changed, "\(log)")
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let reacted = try #require(formatter.date(from: String(line.prefix { $0 != " " })), "\(line)")
        #expect(reacted.timeIntervalSince1970 < waitingUntil, "retried only at the backoff's time: \(line)")
    }
}

/// Whether this machine lets the tests make a network namespace.
enum NetworkNamespace {
    static let unshare = "/usr/bin/unshare"
    static let nsenter = "/usr/bin/nsenter"
    static let ip =
        ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "ip"

    static let isAvailable: Bool = {
        guard FileManager.default.isExecutableFile(atPath: unshare),
            FileManager.default.isExecutableFile(atPath: nsenter),
            FileManager.default.isExecutableFile(atPath: ip)
        else { return false }
        let probe = try? runProcessBlocking(unshare, ["--user", "--map-root-user", "--net", "--", "/bin/true"])
        return probe?.status == 0
    }()
}
