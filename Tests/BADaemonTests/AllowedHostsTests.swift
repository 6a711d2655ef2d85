import BAAssetServer
import BACore
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// basd's `allowedHosts` setting: a download, a redirect hop or a manifest to another host fails at
/// once with the allow-list named, before any name lookup, while loopback downloads go on; an edit
/// applies to the next request.
@Suite("allowedHosts", .timeLimit(.minutes(3)))
struct AllowedHostsTests {
    let ba = BuildProducts.executable("ba")
    /// Not on this machine: were it looked up, the resolver would be asked (not allowed here), and a
    /// background download to an unresolvable host waits and retries instead of failing.
    static let farHost = "cdn.example.com"

    /// Writes basd's settings where the harness's basd reads them (`XDG_CONFIG_HOME` in `directory`),
    /// whole and renamed into place.
    func writeSettings(_ json: String, in directory: TemporaryDirectory) throws -> String {
        let folder = directory.path + "/config/background-assets"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data(json.utf8).write(to: URL(fileURLWithPath: folder + "/config.json.new"))
        guard rename(folder + "/config.json.new", folder + "/config.json") == 0 else {
            throw HarnessError("rename: errno \(errno)")
        }
        return folder + "/config.json"
    }

    @Test("a download and a redirect hop to an unlisted host fail at once, naming the list; loopback finishes")
    func unlistedHostsFailAtOnce() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let here = SampleAppFixture.bytes(5000, seed: 21)
        server.setBehavior(.redirect(to: "https://\(Self.farHost)/hop.bin"), for: "/hop.bin")
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(identifier: "here", path: "/here.bin", contents: here, essential: false),
                .init(
                    identifier: "far", path: "/far.bin", contents: [1, 2, 3], essential: false,
                    url: "https://\(Self.farHost)/far.bin"),
                .init(identifier: "hop", path: "/hop.bin", contents: [4, 5, 6], essential: false),
            ]
        ) { info in
            // The app's own list lets far.bin through admission: only basd's list stands in the way.
            info["BAInitialDownloadRestrictions"] = ["BADownloadDomainAllowList": ["127.0.0.1", Self.farHost]]
        }
        defer { fixture.remove() }
        let directory = try TemporaryDirectory()
        _ = try writeSettings(#"{"allowedHosts": ["127.0.0.1", "localhost", "::1"]}"#, in: directory)
        let daemon = try await DaemonProcess.start(directory: directory)
        defer { daemon.kill() }

        let install = try await runProcess(
            ba, ["install", fixture.appDirectory, "--no-wait", "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        let tests = InstallCommandTests()
        let rows = try await tests.waitForDownloads(daemon, "far and hop to fail, here to finish") {
            InstallCommandTests.state($0["far"]) == "failed" && InstallCommandTests.state($0["hop"]) == "failed"
                && InstallCommandTests.state($0["here"]) == "finished"
        }
        for identifier in ["far", "hop"] {
            let row = try #require(rows[identifier])
            let message = row["errorMessage"] as? String ?? "\(row)"
            // 202: sessionDownloadDisallowedByDomain, the engine's notAllowed; not a resolver error
            // (which for a background download is a wait for the network, never a failure).
            #expect(row["errorCode"] as? Int == 202, "\(identifier): \(row)")
            #expect(message.contains("host '\(Self.farHost)' is not in the allow-list"), "\(message)")
            #expect(message.contains("basd's allowedHosts setting"), "\(message)")
            #expect(!message.localizedCaseInsensitiveContains("resolve"), "\(message)")
        }
        #expect((rows["hop"]?["errorMessage"] as? String)?.contains("redirect hop 1") == true, "\(rows["hop"] ?? [:])")
        // The first attempt failed: no retry was ever scheduled, so no lookup was ever tried.
        #expect(!daemon.standardError.contains("retrying in"), "\(daemon.standardError)")
        #expect(!daemon.standardError.localizedCaseInsensitiveContains("resolve"), "\(daemon.standardError)")
        #expect(rows["here"]?["bytesOnDisk"] as? Int == here.count)
        #expect(server.requests(for: "/hop.bin").count == 1, "the loopback hop itself was fetched")
    }

    @Test("an entry with a port allows that port alone: a redirect to another port of the same host fails at once")
    func entriesWithPorts() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let other = try await AssetServer.start()
        defer { Task { try? await other.shutdown() } }
        let here = SampleAppFixture.bytes(5000, seed: 22)
        other.setFile("/elsewhere.bin", contents: [7, 8, 9])
        server.setBehavior(.redirect(to: other.url("/elsewhere.bin")), for: "/hop.bin")
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(identifier: "here", path: "/here.bin", contents: here, essential: false),
                .init(identifier: "hop", path: "/hop.bin", contents: [4, 5, 6], essential: false),
            ])
        defer { fixture.remove() }
        let directory = try TemporaryDirectory()
        _ = try writeSettings(#"{"allowedHosts": ["127.0.0.1:\#(server.port)", "localhost"]}"#, in: directory)
        let daemon = try await DaemonProcess.start(directory: directory)
        defer { daemon.kill() }

        let install = try await runProcess(
            ba, ["install", fixture.appDirectory, "--no-wait", "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        let rows = try await InstallCommandTests().waitForDownloads(daemon, "hop to fail, here to finish") {
            InstallCommandTests.state($0["hop"]) == "failed" && InstallCommandTests.state($0["here"]) == "finished"
        }
        let hop = try #require(rows["hop"])
        #expect(hop["errorCode"] as? Int == 202, "\(hop)")
        #expect(
            (hop["errorMessage"] as? String)?.contains("host '127.0.0.1' port \(other.port) is not in the allow-list")
                == true, "\(hop)")
        #expect(other.requests(for: "/elsewhere.bin").isEmpty, "the other port was never connected to")
        #expect(rows["here"]?["bytesOnDisk"] as? Int == here.count)
    }

    @Test("a manifest on an unlisted host fails at once; an edit of the list applies to the next request")
    func manifestAndEdit() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(server: server, assets: []) { info in
            info["BAManifestURL"] = "https://\(Self.farHost)/manifest.json"
            // The app's own list allows both: only basd's list stands in the way.
            info["BAInitialDownloadRestrictions"] = ["BADownloadDomainAllowList": ["127.0.0.1", Self.farHost]]
        }
        defer { fixture.remove() }
        let directory = try TemporaryDirectory()
        let settings = try writeSettings(#"{"allowedHosts": ["127.0.0.1", "localhost", "::1"]}"#, in: directory)
        let daemon = try await DaemonProcess.start(directory: directory)
        defer { daemon.kill() }

        let far = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(far.status != 0, "\(far.stdout)\(far.stderr)")
        #expect(
            (far.stdout + far.stderr).contains(
                "host '\(Self.farHost)' is not in the allow-list of basd's allowedHosts"),
            "\(far.stdout)\(far.stderr)")

        // The manifest on loopback: fetched. Then 127.0.0.1 is taken off the list: refused at once.
        try fixture.editInfoPlist { $0["BAManifestURL"] = server.url("/manifest.json") }
        let near = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(near.status == 0, "\(near.stdout)\(near.stderr)\n\(daemon.standardError)")
        _ = try writeSettings(#"{"allowedHosts": ["localhost"]}"#, in: directory)
        _ = try await CLIQueries.poll(
            "basd to load the edit", daemon, timeout: 20, read: { daemon.standardError },
            until: { $0.contains("settings: \(settings) loaded") })
        let edited = try await runProcess(ba, ["update", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(edited.status != 0, "\(edited.stdout)\(edited.stderr)")
        #expect(
            (edited.stdout + edited.stderr).contains("host '127.0.0.1' is not in the allow-list"),
            "\(edited.stdout)\(edited.stderr)")
    }
    @Test("every test basd is confined to loopback: the harness's own settings refuse another host")
    func theHarnessConfinesEveryBasd() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let app = "com.example.confined"
        let cli = try daemon.cliClient()
        try daemon.register(app, version: "1", group: "group.com.example.confined")
        cli.close()
        // No Info.plist restrictions: only basd's allowedHosts (from the harness) stands in the way.
        let client = try daemon.appClient(app)
        defer { client.close() }
        _ = try client.call(.schedule(DownloadDescription(identifier: "far", url: "https://\(Self.farHost)/far.bin")))
        let rows = try await CLIQueries.pollDownloads(
            "far to fail", daemon, app: app, timeout: 30, until: { $0.first?["state"] as? String == "failed" })
        let message = rows.first?["errorMessage"] as? String ?? "\(rows)"
        #expect(message.contains("not in the allow-list of basd's allowedHosts setting (127.0.0.1, localhost, ::1)"))
        // The settings were the test's own, in its temporary folder.
        let settings = daemon.directory.path + "/config/background-assets/config.json"
        #expect(FileManager.default.fileExists(atPath: settings))
    }
    /// The harness's merge into a test's own settings file: nil contents = no file.
    @Test(arguments: [
        (nil as String?, #"{ "allowedHosts": ["127.0.0.1", "localhost", "::1"] }"# + "\n"),
        ("{}", #"{ "allowedHosts": ["127.0.0.1", "localhost", "::1"] }"#),
        (
            #"{"backgroundActivity": false}"#,
            #"{ "allowedHosts": ["127.0.0.1", "localhost", "::1"],"backgroundActivity": false}"#
        ),
        (#"{"allowedHosts": ["localhost"]}"#, #"{"allowedHosts": ["localhost"]}"#),
        (#"{ "backgroundActivity": tru }"#, #"{ "backgroundActivity": tru }"#),
        ("[1]", "[1]"),
    ])
    func theHarnessMergesLoopbackHosts(contents: String?, merged: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/a/config.json"
        if let contents {
            try FileManager.default.createDirectory(atPath: directory.path + "/a", withIntermediateDirectories: true)
            try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        }
        try TestSettings.addLoopbackHosts(to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == merged)
    }

    @Test("the harness's settings file: the test's BA_CONFIG, else the old one in the state folder, else XDG's")
    func theHarnessPicksTheFileBasdReads() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.path + "/state"
        let plain = try TestSettings.prepare(stateDirectory: state)
        #expect(plain["XDG_CONFIG_HOME"] == directory.path + "/config" && plain["BA_CONFIG"] == "")
        #expect(FileManager.default.fileExists(atPath: directory.path + "/config/background-assets/config.json"))

        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: state + "/config.json"))
        try TestSettings.prepare(stateDirectory: state, environment: ["XDG_CONFIG_HOME": directory.path + "/mine"])
        #expect(try String(contentsOfFile: state + "/config.json", encoding: .utf8).contains("allowedHosts"))
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/mine"))

        let own = try TestSettings.prepare(
            stateDirectory: state, environment: ["BA_CONFIG": directory.path + "/own.json"])
        #expect(own["BA_CONFIG"] == directory.path + "/own.json")
        #expect(try String(contentsOfFile: directory.path + "/own.json", encoding: .utf8).contains("allowedHosts"))
    }
}
