import BAAssetServer
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

/// `ba uninstall` and basd's own uninstall of an app whose directory is gone: a real basd, the
/// sample extension, a loopback asset server, `ba` as a process.
@Suite("ba uninstall", .timeLimit(.minutes(3)))
struct UninstallTests {
    let ba = BuildProducts.executable("ba")

    /// The sample app with a finished essential catalog and a slow non-essential level still
    /// downloading when the test goes on.
    func installWithActiveDownload(_ daemon: DaemonProcess, server: AssetServer) async throws -> SampleAppFixture {
        server.setBehavior(.trickle(bytesPerSecond: 64 << 10), for: "/levels/level-1.pak")
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(
                    identifier: "catalog", path: "/catalog.json", contents: SampleAppFixture.catalog, essential: true),
                .init(
                    identifier: "level-1", path: "/levels/level-1.pak",
                    contents: SampleAppFixture.bytes(8 << 20, seed: 3),
                    essential: false),
            ])
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        _ = try await CLIQueries.pollDownloads(
            "level-1 to start", daemon, app: SampleAppFixture.bundleIdentifier, timeout: 30,
            until: { rows in
                rows.contains { $0["identifier"] as? String == "level-1" && ($0["bytesOnDisk"] as? Int ?? 0) > 0 }
            })
        return fixture
    }

    var container: (DaemonProcess) -> String {
        { $0.stateDirectory + "/groups/" + SampleAppFixture.group }
    }

    func allDownloads(_ daemon: DaemonProcess) async throws -> [[String: Any]] {
        let output = try await runProcess(ba, ["downloads", "--json", "--socket", daemon.socketPath])
        let object = try #require(
            (try? JSONSerialization.jsonObject(with: Data(output.stdout.utf8))) as? [String: Any], "\(output.stdout)")
        return object["downloads"] as? [[String: Any]] ?? []
    }

    func appCount(_ daemon: DaemonProcess) async throws -> Int {
        let output = try await runProcess(ba, ["apps", "--json", "--socket", daemon.socketPath])
        let object = (try? JSONSerialization.jsonObject(with: Data(output.stdout.utf8))) as? [String: Any]
        return (object?["apps"] as? [Any])?.count ?? -1
    }

    @Test(
        "ba uninstall cancels the downloads, forgets the app and deletes its container; a second run says not registered"
    )
    func uninstallRemovesEverything() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let fixture = try await installWithActiveDownload(daemon, server: server)
        defer { fixture.remove() }
        #expect(FileManager.default.fileExists(atPath: container(daemon)))

        let first = try await runProcess(
            ba, ["uninstall", SampleAppFixture.bundleIdentifier, "--socket", daemon.socketPath])
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        #expect(first.stdout.contains("uninstalled com.example.ba.sample 1.0"), "\(first.stdout)")
        #expect(first.stdout.contains("cancelled 1 active download(s)"), "\(first.stdout)")
        #expect(first.stdout.contains("deleted its app group container"), "\(first.stdout)")
        #expect(!FileManager.default.fileExists(atPath: container(daemon)))
        #expect(try await appCount(daemon) == 0)
        #expect(try await allDownloads(daemon).isEmpty)
        #expect(await daemon.logged("uninstalled com.example.ba.sample 1.0 (ba uninstall)"))

        // Idempotent: a removal hook run twice.
        let second = try await runProcess(
            ba, ["uninstall", SampleAppFixture.bundleIdentifier, "--json", "--socket", daemon.socketPath])
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        let report = try #require(
            (try? JSONSerialization.jsonObject(with: Data(second.stdout.utf8))) as? [String: Any], "\(second.stdout)")
        #expect(report["wasRegistered"] as? Bool == false)

        // Installable again afresh.
        let again = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        #expect(again.stdout.contains("extension install: ok"), "\(again.stdout)")
    }

    @Test("--keep-data keeps the app group container")
    func keepData() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let fixture = try await installWithActiveDownload(daemon, server: server)
        defer { fixture.remove() }
        let marker = container(daemon) + "/user-data.txt"
        try Data("kept".utf8).write(to: URL(fileURLWithPath: marker))

        let result = try await runProcess(
            ba, ["uninstall", SampleAppFixture.bundleIdentifier, "--keep-data", "--socket", daemon.socketPath])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("kept its app group container: --keep-data"), "\(result.stdout)")
        #expect(FileManager.default.fileExists(atPath: marker))
        #expect(try await appCount(daemon) == 0)
    }

    @Test("basd uninstalls an app whose directory is gone instead of failing its periodic runs forever")
    func directoryGone() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/state", withIntermediateDirectories: true)
        // A quick scheduler tick (a quarter of the minimum interval).
        try Data(#"{"periodicMinimumIntervalSeconds": 1, "periodicBaseIntervalSeconds": 600}"#.utf8)
            .write(to: URL(fileURLWithPath: directory.path + "/state/config.json"))
        let daemon = try await DaemonProcess.start(directory: directory)
        defer { daemon.kill() }
        let fixture = try await installWithActiveDownload(daemon, server: server)
        fixture.remove()

        let apps = try await CLIQueries.poll(
            "basd to uninstall the app", daemon, timeout: 30, read: { try await appCount(daemon) }, until: { $0 == 0 })
        #expect(apps == 0)
        #expect(await daemon.logged("is gone; uninstalling it"), "\(daemon.standardError)")
        #expect(await daemon.logged("(app directory gone)"), "\(daemon.standardError)")
        #expect(!FileManager.default.fileExists(atPath: container(daemon)))
        #expect(try await allDownloads(daemon).isEmpty)
    }
}
