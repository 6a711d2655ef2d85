import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 35's local test loop on a real basd: a signed app installed from its CDN (a loopback
/// asset server), pointed with `ba packs override` at a real `ba pack serve` of another publish
/// folder; the override is the user's (an app's connection is refused), stays on this machine
/// and within `allowedHosts`, still needs the app's signature, survives `kill -9` of basd, and
/// `--clear` goes back to the CDN.
@Suite("ba packs override and ba pack serve", .timeLimit(.minutes(5)))
struct PackOverrideTests {
    let ba = BuildProducts.executable("ba")

    @Test func overrideServeEnsureRestartAndClear() async throws {
        let keys = try TemporaryDirectory()
        defer { keys.remove() }
        let key = keys.path + "/signing.key"
        #expect(try await runProcess(ba, ["pack", "keygen", "-o", key]).status == 0)
        let publicKey = try String(contentsOfFile: key + ".pub", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let fixture = try await PackFixture.make(publicKey: publicKey)
        defer { fixture.remove() }
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": [1, 2, 3]])
        try await fixture.publish(["base"], version: 1, key: key)
        var daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let socket = { ["--socket", daemon.socketPath] }
        let install = try await runProcess(ba, ["install", fixture.appDirectory] + socket())
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")

        // The test server's folder: base (the same version) and a new on-demand pack.
        let local = fixture.directory.path + "/local"
        try fixture.write(
            pack: "extra", policy: PackFixture.onDemand, files: ["x/e.bin": PackFixture.random(200_000, seed: 35)])
        for id in ["base", "extra"] {
            let build = try await runProcess(
                ba, ["pack", "build", fixture.source + "/\(id).json", "--version", "1", "-o", local])
            #expect(build.status == 0, "\(build.stderr)")
        }
        let serve = try ChildProcess(ba, ["pack", "serve", local])
        defer { serve.kill() }
        try await serve.waiting("its serving line") { !$0.stdoutLines.isEmpty }
        let url = try #require(
            serve.stdoutLines[0].split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") }.map(String.init))
        let manifestURL = url + "/manifest.json"
        // Unsigned first: a signed app refuses it even through an override.
        #expect(try await runProcess(ba, ["pack", "publish", local, "--base-url", url]).status == 0)

        // Refused: an unknown app, a host beyond allowedHosts (its error), an app's own connection.
        let unknown = try await runProcess(ba, ["packs", "override", "com.example.nobody", manifestURL] + socket())
        #expect(unknown.status == 33 && unknown.stderr.contains("not registered"), "\(unknown.stderr)")
        let remote = try await runProcess(
            ba, ["packs", "override", PackFixture.app, "https://203.0.113.7/manifest.json"] + socket())
        #expect(remote.status == 33, "\(remote.stderr)")
        #expect(remote.stderr.contains("allow-list of basd's allowedHosts setting"), "\(remote.stderr)")
        let app = try daemon.appClient(PackFixture.app)
        #expect(throws: DaemonClientError.self) {
            try app.call(.packs(PackCommand(action: .override, app: PackFixture.app, url: manifestURL)))
        }
        app.close()

        let unsigned = try await runProcess(ba, ["packs", "override", PackFixture.app, manifestURL] + socket())
        #expect(unsigned.status == 33, "\(unsigned.stdout)")
        #expect(unsigned.stderr.contains("manifest check failed"), "\(unsigned.stderr)")
        #expect(try await fixture.packs(daemon)["extra"] == nil, "an unsigned manifest lists nothing")

        // Signed with the app's key: taken, at once.
        let published = try await runProcess(
            ba, ["pack", "publish", local, "--base-url", url, "--key", key, "--app", PackFixture.app])
        #expect(published.status == 0, "\(published.stderr)")
        let set = try await runProcess(ba, ["packs", "override", PackFixture.app, manifestURL] + socket())
        #expect(set.status == 0, "\(set.stdout)\(set.stderr)")
        let listed = try await runProcess(ba, ["packs", "--app", PackFixture.app] + socket())
        #expect(listed.stdout.contains("overridden with \(manifestURL)"), "\(listed.stdout)")
        let ensure = try await runProcess(ba, ["packs", "ensure", PackFixture.app, "extra"] + socket())
        #expect(ensure.status == 0, "\(ensure.stdout)\(ensure.stderr)")
        let file = PackFixture.packPath(daemon, "extra") + "/extra/x/e.bin"
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: file))) == PackFixture.random(200_000, seed: 35))
        #expect(fixture.server.requests.allSatisfy { !$0.path.hasPrefix("/packs/extra") }, "all from the test server")

        // kill -9 of basd: the override is still there, and used.
        daemon = try await daemon.restarted()
        let json = try await runProcess(ba, ["packs", "--app", PackFixture.app, "--json"] + socket())
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["overrides"] as? [String: String] == [PackFixture.app: manifestURL], "\(json.stdout)")
        let check = try await runProcess(ba, ["packs", "check", PackFixture.app] + socket())
        #expect(check.status == 0, "\(check.stderr)")
        #expect(try await fixture.packs(daemon)["extra"]?["localVersion"] as? Int == 1)

        // Cleared: the CDN's manifest again, which does not list extra (its files go).
        let clear = try await runProcess(ba, ["packs", "override", PackFixture.app, "--clear"] + socket())
        #expect(clear.status == 0, "\(clear.stderr)")
        #expect(try await runProcess(ba, ["packs", "check", PackFixture.app] + socket()).status == 0)
        let after = try await runProcess(ba, ["packs", "--app", PackFixture.app, "--json"] + socket())
        #expect(!after.stdout.contains("overrides"), "\(after.stdout)")
        _ = try await fixture.waitForPacks(daemon, "extra no longer listed") { $0["extra"] == nil }
        #expect(try await fixture.packs(daemon)["base"]?["localVersion"] as? Int == 1)

        serve.signal(SIGTERM)
        #expect(serve.waitForTermination() == .exited(0))
    }

    /// A host basd's `allowedHosts` allows is still refused when it is not this machine: an
    /// override is a test loop, not another CDN. An uninstall takes the override with the app.
    @Test func onlyLoopbackAndGoneWithTheApp() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": [1]])
        try await fixture.publish(["base"], version: 1)
        let settings = try TemporaryDirectory()
        defer { settings.remove() }
        let config = try settings.write(
            "config.json", #"{"allowedHosts": ["127.0.0.1", "::1", "localhost", "203.0.113.7"]}"#)
        let daemon = try await DaemonProcess.start(environment: ["BA_CONFIG": config])
        defer { daemon.kill() }
        let socket = ["--socket", daemon.socketPath]
        #expect(try await runProcess(ba, ["install", fixture.appDirectory] + socket).status == 0)
        let remote = try await runProcess(
            ba, ["packs", "override", PackFixture.app, "https://203.0.113.7/manifest.json"] + socket)
        #expect(remote.status == 33, "\(remote.stdout)")
        #expect(remote.stderr.contains("a test server on this machine"), "\(remote.stderr)")
        let plain = try await runProcess(
            ba, ["packs", "override", PackFixture.app, "http://203.0.113.7/manifest.json"] + socket)
        #expect(plain.status == 33 && plain.stderr.contains("plain http"), "\(plain.stderr)")

        let set = try await runProcess(
            ba, ["packs", "override", PackFixture.app, fixture.server.url("/manifest.json")] + socket)
        #expect(set.status == 0, "\(set.stdout)\(set.stderr)")
        #expect(try await runProcess(ba, ["uninstall", PackFixture.app] + socket).status == 0)
        #expect(try await runProcess(ba, ["install", fixture.appDirectory] + socket).status == 0)
        let listed = try await runProcess(ba, ["packs", "--json"] + socket)
        #expect(listed.status == 0 && !listed.stdout.contains("overrides"), "\(listed.stdout)")
    }
}
