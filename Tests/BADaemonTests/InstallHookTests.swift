import BAAssetServer
import BATestSupport
import Foundation
import Testing

/// `ba install`/`ba update` as a package hook runs them: bounded by `--timeout`, and a re-run while
/// an essential download is still going waits for that download instead of refusing it.
@Suite("ba install in a package hook", .timeLimit(.minutes(2)))
struct InstallHookTests {
    let ba = BuildProducts.executable("ba")

    /// One essential download that the server stalls after its first KiB: it stays active (and
    /// idle) until the test ends, however busy the machine.
    func stalledFixture(_ server: AssetServer) throws -> SampleAppFixture {
        server.setBehavior(.stall(afterBytes: 1024), for: "/levels/level-1.pak")
        return try SampleAppFixture(
            server: server,
            assets: [
                .init(
                    identifier: "level-1", path: "/levels/level-1.pak",
                    contents: SampleAppFixture.bytes(1 << 20, seed: 5), essential: true)
            ])
    }

    @Test("--timeout: ba stops waiting with exit 22 and basd goes on")
    func timeout() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try stalledFixture(server)
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        // The download stalls, so ba always gives up; 5 s (not 1) leaves a busy machine time to run
        // the install's extension call and print its report before the deadline.
        let install = try await runProcess(
            ba, ["install", fixture.appDirectory, "--timeout", "5", "--socket", daemon.socketPath])
        #expect(install.status == 22, "\(install.stdout)\(install.stderr)")
        #expect(install.stderr.contains("gave up waiting after 5.0 s (--timeout)"), "\(install.stderr)")
        // Line-buffered on a pipe: the report printed before the deadline is there.
        #expect(install.stdout.contains("scheduled 1 essential"), "\(install.stdout)")
        // basd goes on with the download ba stopped waiting for.
        let rows = try await CLIQueries.downloadRows(daemon, app: SampleAppFixture.bundleIdentifier)
        let state = rows.first?["state"] as? String
        #expect(state == "downloading" || state == "waiting", "\(rows)")
        let bad = try await runProcess(ba, ["install", fixture.appDirectory, "--timeout", "0"])
        #expect(bad.status == 64, "\(bad.stderr)")
    }

    @Test("a re-run while the essential download is still going waits for it (no duplicate refusal)")
    func adoptsTheActiveEssential() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try stalledFixture(server)
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let first = try await runProcess(
            ba, ["install", fixture.appDirectory, "--no-wait", "--socket", daemon.socketPath])
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        // The update waits for the download the install started (bounded here by --timeout).
        let again = try await runProcess(
            ba, ["update", fixture.appDirectory, "--timeout", "5", "--socket", daemon.socketPath])
        #expect(again.status == 22, "\(again.stdout)\(again.stderr)\n\(daemon.standardError)")
        #expect(!again.stdout.contains("refused"), "\(again.stdout)")
        #expect(again.stdout.contains("scheduled 1 essential"), "\(again.stdout)")
        #expect(await daemon.logged("essential \"level-1\" is already scheduled; waiting for it"))
        let rows = try await CLIQueries.downloadRows(daemon, app: SampleAppFixture.bundleIdentifier)
        #expect(rows.count == 1, "one download, adopted, not a second one: \(rows)")
    }

    @Test("a refused non-essential download: said on stderr (exit 0), a failure with --strict (exit 20)")
    func strict() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(
                    identifier: "catalog", path: "/catalog.json", contents: SampleAppFixture.catalog, essential: true),
                .init(
                    identifier: "extra", path: "/extra.bin", contents: SampleAppFixture.bytes(4096, seed: 6),
                    essential: false),
            ],
            plist: { $0["BAMaxInstallSize"] = 1000 })
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        #expect(install.stderr.contains("download \"extra\" was refused"), "\(install.stderr)")
        #expect(install.stderr.contains("--strict makes this a failure"), "\(install.stderr)")
        // The same install, strict, on a basd of its own.
        let other = try await DaemonProcess.start()
        defer { other.kill() }
        let strict = try await runProcess(
            ba, ["install", fixture.appDirectory, "--strict", "--socket", other.socketPath])
        #expect(strict.status == 20, "\(strict.stdout)\(strict.stderr)")
        #expect(strict.stderr.contains("download \"extra\" was refused"), "\(strict.stderr)")
    }
}
