import BAAssetServer
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A private CA and a server certificate for `localhost` and 127.0.0.1, made by `openssl`, and
/// `openssl s_server -WWW` serving a folder over TLS on loopback.
final class PrivateCATLSServer {
    let directory: TemporaryDirectory
    let process: ChildProcess
    let port: Int
    var caFile: String { directory.path + "/ca.pem" }
    var caDirectory: String { directory.path + "/ca.d" }
    var root: String { directory.path + "/www" }

    static let openssl = "/usr/bin/openssl"
    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: openssl) }

    init() async throws {
        directory = try TemporaryDirectory()
        let path = directory.path
        try directory.write("san.cnf", "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        for arguments in [
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                "ca.key", "-out", "ca.pem", "-days", "2",
                "-subj", "/CN=Background Assets Test CA",
            ],
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "server.key",
                "-out", "server.csr", "-subj",
                "/CN=localhost",
            ],
            [
                "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", "server.pem", "-days", "2", "-extfile", "san.cnf",
            ],
        ] {
            let result = try await runProcess(Self.openssl, arguments, currentDirectory: path)
            guard result.status == 0 else { throw HarnessError("openssl \(arguments[0]): \(result.stderr)") }
        }
        try FileManager.default.createDirectory(atPath: path + "/ca.d", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: path + "/ca.pem", toPath: path + "/ca.d/ca.pem")
        let rehash = try await runProcess(Self.openssl, ["rehash", path + "/ca.d"])
        guard rehash.status == 0 else { throw HarnessError("openssl rehash: \(rehash.stderr)") }
        try FileManager.default.createDirectory(atPath: path + "/www", withIntermediateDirectories: true)

        // Port 0: the kernel picks one, and s_server prints it ("ACCEPT 127.0.0.1:PORT").
        let server = try ChildProcess(
            Self.openssl,
            [
                "s_server", "-WWW", "-accept", "127.0.0.1:0", "-cert", path + "/server.pem", "-key",
                path + "/server.key",
            ], currentDirectory: path + "/www")
        func announced(_ process: ChildProcess) -> Int? {
            let line = process.stdoutLines.first { $0.hasPrefix("ACCEPT") }
            return line?.split(separator: ":").last.flatMap { Int($0) }
        }
        do {
            try await server.waiting("openssl s_server to say its port", timeout: 30) { announced($0) != nil }
        } catch {
            server.kill()
            throw error
        }
        process = server
        port = announced(server) ?? 0
    }

    func url(_ path: String) -> String { "https://localhost:\(port)\(path)" }

    func serve(_ name: String, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: root + "/" + name))
    }

    func stop() {
        process.kill()
        directory.remove()
    }
}

/// basd trusting a private CA: the failure names its cause and the setting, and `caFile` /
/// `caDirectory` fix it for downloads and manifests.
@Suite(
    "TLS with a private CA", .timeLimit(.minutes(3)),
    .enabled(if: PrivateCATLSServer.isAvailable, "needs /usr/bin/openssl"))
struct TLSTests {
    let ba = BuildProducts.executable("ba")

    func writeSettings(_ json: String, in directory: TemporaryDirectory) throws {
        try FileManager.default.createDirectory(atPath: directory.path + "/state", withIntermediateDirectories: true)
        try Data(json.utf8).write(to: URL(fileURLWithPath: directory.path + "/state/config.json"))
    }

    @Test(
        "untrusted: the error says why and names caFile; with caFile the download works; with caDirectory the manifest too"
    )
    func privateCA() async throws {
        let tls = try await PrivateCATLSServer()
        defer { tls.stop() }
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        try tls.serve("catalog.json", SampleAppFixture.catalog)
        let manifest = try JSONSerialization.data(
            withJSONObject: [
                "applicationGroupIdentifier": SampleAppFixture.group,
                "assets": [
                    [
                        "identifier": "catalog", "url": tls.url("/catalog.json"),
                        "fileSize": SampleAppFixture.catalog.count, "essential": true,
                    ]
                ],
            ])
        let fixture = try SampleAppFixture(server: server, manifest: Array(manifest))
        defer { fixture.remove() }
        let directory = try TemporaryDirectory()

        // 1. No CA configured: the essential download fails, and everyone says why.
        var daemon = try await DaemonProcess.start(directory: directory)
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 20, "\(install.stdout)\(install.stderr)")
        #expect(install.stderr.contains("unable to get local issuer certificate"), "\(install.stderr)")
        #expect(install.stderr.contains("caFile"), "\(install.stderr)")
        let rows = try await CLIQueries.downloadRows(daemon, app: SampleAppFixture.bundleIdentifier)
        // The failed one: the sample extension, woken for the failure, schedules the catalog again
        // (the failed-essential re-queue), so a second row may be there already.
        let failed = try #require(
            rows.first { $0["identifier"] as? String == "catalog" && $0["state"] as? String == "failed" }, "\(rows)")
        #expect(
            (failed["errorMessage"] as? String ?? "\(failed)").contains("unable to get local issuer certificate"),
            "\(failed)")
        // A TLS failure of a download is not retried (docs/operations.md, "TLS and proxies").
        #expect(!daemon.standardError.contains("retrying in"), "\(daemon.standardError)")
        // Every request names basd and its version.
        let agent = server.requests(for: "/manifest.json").first?.header("user-agent")
        #expect(agent?.hasPrefix("basd/\(ReleaseVersion.string)") == true, "\(agent ?? "none")")
        // Stopped, not killed: `kill()` would remove the state folder.
        daemon.send(SIGTERM)
        #expect(daemon.waitForExit(timeout: 10) != nil)

        // 2. caFile: the same download succeeds.
        try writeSettings(#"{"caFile": "\#(tls.caFile)"}"#, in: directory)
        daemon = try await DaemonProcess.start(directory: directory)
        let update = try await runProcess(ba, ["update", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(update.status == 0, "\(update.stdout)\(update.stderr)\n\(daemon.standardError)")
        #expect(update.stdout.contains("finished catalog"), "\(update.stdout)")
        // Stopped, not killed: `kill()` would remove the state folder.
        daemon.send(SIGTERM)
        #expect(daemon.waitForExit(timeout: 10) != nil)

        // 3. The manifest over TLS too, trusted through caDirectory.
        try tls.serve("manifest.json", Array(manifest))
        try fixture.editInfoPlist { $0["BAManifestURL"] = tls.url("/manifest.json") }
        try writeSettings(#"{"caDirectory": "\#(tls.caDirectory)"}"#, in: directory)
        daemon = try await DaemonProcess.start(directory: directory)
        defer { daemon.kill() }
        let again = try await runProcess(ba, ["update", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)\n\(daemon.standardError)")
        #expect(again.stdout.contains("finished catalog"), "\(again.stdout)")
    }

    @Test("an untrusted manifest: ba install's report names the cause and caFile")
    func untrustedManifest() async throws {
        let tls = try await PrivateCATLSServer()
        defer { tls.stop() }
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(server: server, assets: [])
        defer { fixture.remove() }
        try tls.serve("manifest.json", Array(#"{"assets": []}"#.utf8))
        try fixture.editInfoPlist { $0["BAManifestURL"] = tls.url("/manifest.json") }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 20, "\(install.stdout)\(install.stderr)")
        let output = install.stdout + install.stderr
        #expect(output.contains("unable to get local issuer certificate"), "\(output)")
        #expect(output.contains("caFile"), "\(output)")
        #expect(await daemon.logged("unable to get local issuer certificate"), "\(daemon.standardError)")
        // A manifest is fetched again by basd, a TLS failure too (docs/operations.md, "TLS and proxies").
        #expect(output.contains("basd tries again in 5 s by itself"), "\(output)")
    }

    @Test("pinnedPublicKey: a server presenting another key fails, naming the setting")
    func wrongPin() async throws {
        let tls = try await PrivateCATLSServer()
        defer { tls.stop() }
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(server: server, assets: [])
        defer { fixture.remove() }
        try tls.serve("manifest.json", Array(#"{"assets": []}"#.utf8))
        try fixture.editInfoPlist { $0["BAManifestURL"] = tls.url("/manifest.json") }
        let directory = try TemporaryDirectory()
        let wrong = "sha256//" + Data(repeating: 0, count: 32).base64EncodedString()
        try writeSettings(#"{"caFile": "\#(tls.caFile)", "pinnedPublicKey": "\#(wrong)"}"#, in: directory)
        let daemon = try await DaemonProcess.start(directory: directory)
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 20, "\(install.stdout)\(install.stderr)")
        #expect(install.stdout.contains("pinnedPublicKey"), "\(install.stdout)")
    }

    @Test("a caFile that does not exist stops basd at start with the key named")
    func missingCAFile() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try writeSettings(#"{"caFile": "/nonexistent/ca.pem"}"#, in: directory)
        let result = try runDaemonToExit(
            stateDirectory: directory.path + "/state", socketPath: directory.path + "/basd.sock")
        #expect(result.status != 0)
        #expect(result.stderr.contains("caFile: no file at /nonexistent/ca.pem"), "\(result.stderr)")
    }
}
