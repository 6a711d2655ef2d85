import BAAssetServer
import BATestSupport
import Foundation
import Testing

/// Localized packs end to end (issue 35): packs published in two languages with `ba pack`, a real
/// basd choosing by its environment's languages, an app (BATestApp, public API only) switching
/// its language, and the extension told `languageChange`.
@Suite("localized asset packs", .timeLimit(.minutes(5)))
struct PackLanguageTests {
    let ba = BuildProducts.executable("ba")

    /// basd's environment: British English preferred.
    static let english = ["LANG": "en_GB.UTF-8", "LANGUAGE": "", "LC_ALL": "", "LC_MESSAGES": ""]

    /// A fixture with the C test extension, a non-localized essential `base`, and `voice-en` and
    /// `voice-fr` (prefetch, English and French), version 1.
    static func fixture() async throws -> (PackFixture, voiceEN: [UInt8], voiceFR: [UInt8]) {
        let fixture = try await PackFixture.make()
        try fixture.useExtension("BATestShouldDownload") { $0["CFBundleDevelopmentRegion"] = "en" }
        let voiceEN = PackFixture.random(300_000, seed: 21)
        let voiceFR = PackFixture.random(300_000, seed: 22)
        try fixture.write(
            pack: "base", policy: PackFixture.essential, files: ["a.bin": PackFixture.random(1000, seed: 20)])
        // The same path in both languages: the app reads it as localized for one. Both carry the
        // same music (chunks two languages share).
        let music = PackFixture.random(600_000, seed: 23)
        try fixture.write(
            pack: "voice-en", policy: PackFixture.prefetch, files: ["voice.bin": voiceEN, "music.bin": music],
            language: "en")
        try fixture.write(
            pack: "voice-fr", policy: PackFixture.prefetch, files: ["voice.bin": voiceFR, "music.bin": music],
            language: "fr")
        try await fixture.publish(["base", "voice-en", "voice-fr"], version: 1)
        return (fixture, voiceEN, voiceFR)
    }

    @Test(
        "basd installs only the preferred language's packs (en-GB → en); the app switches to French: voice-fr is installed, then voice-en removed, and the extension told languageChange; the choice survives a restart (nginx)"
    )
    func switchLanguage() async throws {
        let (fixture, voiceEN, voiceFR) = try await Self.fixture()
        defer { fixture.remove() }
        // Served by nginx: the manifest published again for its URL, and the app pointed at it.
        let nginx = try await Nginx.start(root: fixture.publish, directory: fixture.directory.path)
        defer { nginx.stop() }
        let republished = try await runProcess(ba, ["pack", "publish", fixture.publish, "--base-url", nginx.baseURL])
        #expect(republished.status == 0, "\(republished.stdout)\(republished.stderr)")
        try fixture.readManifest(from: nginx.baseURL)
        func served(_ path: String) -> Int { nginx.requests.filter { $0.path == path }.count }
        // ba pack publish lists each pack's language.
        let manifest = try String(contentsOfFile: fixture.publish + "/manifest.json", encoding: .utf8)
        #expect(manifest.contains(#""language":"fr""#) || manifest.contains(#""language" : "fr""#), "\(manifest)")
        var daemon = try await DaemonProcess.start(environment: Self.english)
        defer { daemon.kill() }

        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        let first = try await fixture.waitForPacks(daemon, "voice-en to be local") {
            $0["voice-en"]?["localVersion"] as? Int == 1
        }
        #expect(first["voice-fr"]?["localVersion"] == nil, "\(first)")
        #expect(first["voice-en"]?["language"] as? String == "en")
        #expect(first["voice-fr"]?["language"] as? String == "fr")
        #expect(first["base"]?["language"] == nil)
        #expect(served("/packs/voice-fr/1.json") == 0)
        #expect(PackAssert.same(PackFixture.packPath(daemon, "voice-en") + "/voice-en/voice.bin", voiceEN))
        // The extension is asked about the packs that come: not about voice-fr.
        #expect(await daemon.logged("asking its extension about base, voice-en"), "\(daemon.standardError)")
        let asked = daemon.standardError.split(separator: "\n").first { $0.contains("asking its extension about") }
        #expect(asked?.contains("voice-fr") == false, "\(asked ?? "")")
        let table = try await runProcess(ba, ["packs", "--app", PackFixture.app, "--socket", daemon.socketPath])
        #expect(table.stdout.contains("language"), "\(table.stdout)")

        let app = try TestApp(
            socketPath: daemon.socketPath, bundleIdentifier: PackFixture.app, group: PackFixture.group,
            environment: ["LANG": "C"])
        let before = try await app.run("readlang voice-en/voice.bin en-GB")
        #expect(before["size"] as? Int == voiceEN.count, "\(before.object)")

        // The app's language: French. reconcilePreferredLanguages() returns once it is in place.
        let switched = try await app.run("language fr")
        #expect(switched.bool("ok") == true, "\(switched.object)\n\(daemon.standardError)")
        #expect(switched["resolved"] as? String == "fr", "\(switched.object)")
        #expect(switched["local"] as? [String] == ["fr"], "\(switched.object)")
        #expect(switched["available"] as? [String] == ["en", "fr"], "\(switched.object)")
        #expect(switched["localized"] as? [String] == ["voice-fr"], "\(switched.object)")
        let after = try await fixture.packs(daemon)
        #expect(after["voice-fr"]?["localVersion"] as? Int == 1, "\(after)")
        #expect(after["voice-en"]?["localVersion"] == nil, "\(after)")
        #expect(after["base"]?["localVersion"] as? Int == 1, "\(after)")
        #expect(PackAssert.same(PackFixture.packPath(daemon, "voice-fr") + "/voice-fr/voice.bin", voiceFR))
        var link = stat()
        #expect(lstat(PackFixture.packPath(daemon, "voice-en"), &link) != 0)
        let french = try await app.run("readlang voice-fr/voice.bin fr-CA")
        #expect(french["size"] as? Int == voiceFR.count, "\(french.object)")
        let gone = try await app.run("readlang voice-en/voice.bin en")
        #expect(gone.bool("ok") == false, "\(gone.object)")
        // The music both languages share was read from voice-en (still local while voice-fr came),
        // not fetched again: at least its 600,000 bytes reused.
        let finished = "asset pack voice-fr of \(PackFixture.app): version 1 is local (fetched "
        #expect(await daemon.logged(finished), "\(daemon.standardError)")
        let line = daemon.standardError.split(separator: "\n").first { $0.contains(finished) }.map(String.init) ?? ""
        let reused = line.split(separator: "reused ").last?.split(separator: " ").first.flatMap { Int($0) } ?? 0
        #expect(reused >= 600_000, "\(line)")
        // The extension was told (BA_CONTENT_REQUEST_LANGUAGE_CHANGE, 4).
        #expect(await daemon.logged("downloads_for_request 4"), "\(daemon.standardError)")
        app.kill()

        // The app's language is kept: after a restart (kill -9), a periodic check keeps French.
        daemon = try await daemon.restarted()
        let check = try await runProcess(ba, ["packs", "check", PackFixture.app, "--socket", daemon.socketPath])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        let kept = try await fixture.packs(daemon)
        #expect(kept["voice-fr"]?["localVersion"] as? Int == 1, "\(kept)")
        #expect(kept["voice-en"]?["localVersion"] == nil, "\(kept)")
        #expect(served("/packs/voice-en/1.json") == 1)
        #expect(served("/packs/voice-fr/1.json") == 1)
        #expect(fixture.server.requests(for: "/manifest.json").isEmpty)
    }

    @Test(
        "a manifest entry whose language is garbage: that pack is refused (1102), the others install, basd goes on"
    )
    func garbageLanguage() async throws {
        let (fixture, _, _) = try await Self.fixture()
        defer { fixture.remove() }
        // A lying CDN: the manifest (unsigned) names a language that is no BCP-47 tag.
        let path = fixture.publish + "/manifest.json"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lied = text.replacingOccurrences(of: #""language":"fr""#, with: #""language":"f!r; rm -rf""#)
            .replacingOccurrences(of: #""language" : "fr""#, with: #""language" : "f!r; rm -rf""#)
        #expect(lied != text)
        try Data(lied.utf8).write(to: URL(fileURLWithPath: path))
        let daemon = try await DaemonProcess.start(environment: ["LANG": "fr_FR.UTF-8", "LANGUAGE": "", "LC_ALL": ""])
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        // French is not available (its only pack is refused): the primary language, English.
        let packs = try await fixture.waitForPacks(daemon, "voice-en to be local") {
            $0["voice-en"]?["localVersion"] as? Int == 1
        }
        #expect(packs["voice-fr"]?["localVersion"] == nil)
        #expect(packs["voice-fr"]?["errorCode"] as? Int == 1102, "\(packs)")
        #expect(fixture.server.requests(for: "/packs/voice-fr/1.json").isEmpty)
        // Asked for, it is refused too.
        let ensure = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "voice-fr", "--socket", daemon.socketPath])
        #expect(fixture.server.requests(for: "/packs/voice-fr/1.json").isEmpty, "\(ensure.stdout)\(ensure.stderr)")
        #expect(daemon.waitForExit(timeout: 0) == nil)
    }
}

extension PackLanguageTests {
    @Test(
        "kill -9 in the middle of a switch: the old language's pack stays until the new one is in place, and the switch ends after the restart"
    )
    func killMidSwitch() async throws {
        let (fixture, voiceEN, voiceFR) = try await Self.fixture()
        defer { fixture.remove() }
        var daemon = try await DaemonProcess.start(environment: Self.english)
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        _ = try await fixture.waitForPacks(daemon, "voice-en to be local") {
            $0["voice-en"]?["localVersion"] as? Int == 1
        }
        // French's only bundle hangs: the switch stays under way.
        fixture.server.setBehavior(.stall(afterBytes: 0), for: "/packs/voice-fr/1-0.bundle")
        let app = try TestApp(
            socketPath: daemon.socketPath, bundleIdentifier: PackFixture.app, group: PackFixture.group,
            environment: ["LANG": "C"])
        defer { app.kill() }
        app.send("language fr")
        let under = try await fixture.waitForPacks(daemon, "voice-fr to be downloading") {
            ($0["voice-fr"]?["status"] as? String)?.contains("downloading") == true
        }
        #expect(under["voice-en"]?["localVersion"] as? Int == 1, "\(under)")

        daemon = try await daemon.restarted()
        let after = try await fixture.packs(daemon)
        #expect(after["voice-en"]?["localVersion"] as? Int == 1, "\(after)")
        #expect(PackAssert.same(PackFixture.packPath(daemon, "voice-en") + "/voice-en/voice.bin", voiceEN))

        // The server answers again: the resumed download ends the switch (its first request, made
        // at the restart, still hangs until the engine gives up on it: about 30 s).
        fixture.server.setBehavior(nil, for: "/packs/voice-fr/1-0.bundle")
        let done = try await fixture.waitForPacks(daemon, "voice-fr in, voice-en out") {
            $0["voice-fr"]?["localVersion"] as? Int == 1 && $0["voice-en"]?["localVersion"] == nil
        }
        #expect(done["base"]?["localVersion"] as? Int == 1, "\(done)")
        #expect(PackAssert.same(PackFixture.packPath(daemon, "voice-fr") + "/voice-fr/voice.bin", voiceFR))
        var link = stat()
        #expect(lstat(PackFixture.packPath(daemon, "voice-en"), &link) != 0)
    }
}

extension PackLanguageTests {
    @Test(
        "the app's own preferred languages (its LANG) decide when its language is one no pack has: fr-FR → fr"
    )
    func appPreferredLanguages() async throws {
        let (fixture, _, voiceFR) = try await Self.fixture()
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start(environment: Self.english)
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        _ = try await fixture.waitForPacks(daemon, "voice-en to be local") {
            $0["voice-en"]?["localVersion"] as? Int == 1
        }
        let app = try TestApp(
            socketPath: daemon.socketPath, bundleIdentifier: PackFixture.app, group: PackFixture.group,
            environment: ["LANG": "fr_FR.UTF-8", "LANGUAGE": "", "LC_ALL": "", "LC_MESSAGES": ""])
        defer { app.kill() }
        // Japanese: no pack has it; the app's preferred French decides.
        let switched = try await app.run("language ja")
        #expect(switched.bool("ok") == true, "\(switched.object)\n\(daemon.standardError)")
        #expect(switched["resolved"] as? String == "fr", "\(switched.object)")
        let after = try await fixture.packs(daemon)
        #expect(after["voice-fr"]?["localVersion"] as? Int == 1, "\(after)")
        #expect(after["voice-en"]?["localVersion"] == nil, "\(after)")
        #expect(PackAssert.same(PackFixture.packPath(daemon, "voice-fr") + "/voice-fr/voice.bin", voiceFR))
        // `ba packs --app --json` carries the app's language.
        let listing = try await runProcess(
            ba, ["packs", "--app", PackFixture.app, "--json", "--socket", daemon.socketPath])
        #expect(listing.stdout.contains(#""resolvedLanguage":"fr""#), "\(listing.stdout)")
    }
}

/// File comparisons that print no megabytes on failure.
enum PackAssert {
    static func same(_ path: String, _ bytes: [UInt8]) -> Bool {
        FileManager.default.contents(atPath: path).map(Array.init) == bytes
    }
}
