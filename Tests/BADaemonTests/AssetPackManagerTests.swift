import BAAssetServer
import BADownloadEngine
import BAHashing
import BAPacks
import BATestSupport
import Foundation
import Testing

/// `AssetPackManager` in a real app process (BATestApp, public API only) against a real basd
/// and packs published with `ba pack` on a loopback server.
@Suite("AssetPackManager in an app", .timeLimit(.minutes(5)))
struct AssetPackManagerTests {
    let ba = BuildProducts.executable("ba")

    static func sha256(_ bytes: [UInt8]) -> String { SHA256Hasher.hex(of: bytes) }

    /// Publishes an essential `base` and an on-demand `big` (3 MiB, single chunks only) whose
    /// chunks all stall but the first three, so that its download stays in progress; returns its
    /// bytes and the stalled paths.
    static func publishStalledBigPack(
        _ fixture: PackFixture, seed: UInt64
    ) async throws -> (
        big: [UInt8], stalled: [String]
    ) {
        let big = PackFixture.random(3 << 20, seed: seed)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["c.bin": [1, 2, 3]])
        try fixture.write(pack: "big", policy: PackFixture.onDemand, files: ["big.bin": big])
        try await fixture.publish(["base", "big"], version: 1, bundleSize: 0)
        let chunks = try fixture.chunks(pack: "big", version: 1)
        #expect(chunks.count > 8)
        let stalled = chunks.dropFirst(3).map { "/" + PackIndex.chunkPath($0) }
        for path in stalled { fixture.server.setBehavior(.stall(afterBytes: 0), for: path) }
        return (big, stalled)
    }

    /// The follower lines of `pack` so far.
    static func updates(_ app: TestApp, _ follower: String) -> [AppLine] {
        app.lines.filter { $0.string("follower") == follower && $0["update"] != nil }
    }

    @Test(
        "policies seen from the app; an on-demand pack ensured with its updates in order; files across packs; remove; checkForUpdates with an updated and a removed pack"
    )
    func managerEndToEnd() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let config = PackFixture.random(100_000, seed: 11)
        var level = PackFixture.random(700_000, seed: 12)
        let extra = PackFixture.random(300_000, seed: 13)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["config.bin": config])
        try fixture.write(pack: "levels", policy: PackFixture.prefetch, files: ["l1.bin": level])
        try fixture.write(pack: "extras", policy: PackFixture.onDemand, files: ["x.bin": extra])
        try await fixture.publish(["base", "levels", "extras"], version: 1)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        _ = try await fixture.waitForPacks(daemon, "levels to be local") { $0["levels"]?["localVersion"] as? Int == 1 }

        let app = try TestApp(
            socketPath: daemon.socketPath, bundleIdentifier: PackFixture.app, group: PackFixture.group)
        defer { app.kill() }

        // Each policy as the app sees it: essential and prefetch local, on-demand not.
        let all = try await app.run("apacks")
        let listed = try #require(all["packs"] as? [[String: Any]])
        #expect(listed.compactMap { $0["id"] as? String } == ["base", "extras", "levels"], "\(all.object)")
        #expect(listed.allSatisfy { $0["version"] as? Int == 1 && ($0["downloadSize"] as? Int ?? 0) > 0 })
        #expect(try await app.run("local base")["available"] as? Bool == true)
        #expect(try await app.run("local levels")["status"] as? Int == (1 << 6 | 1 << 2))  // downloaded, upToDate
        let extrasBefore = try await app.run("local extras")
        #expect(extrasBefore["available"] as? Bool == false)
        #expect(extrasBefore["status"] as? Int == 1 << 0, "\(extrasBefore.object)")  // downloadAvailable

        // ensureLocalAvailability of the on-demand pack, its status updates in order.
        #expect(try await app.run("follow extras").bool("ok") == true)
        #expect(try await app.run("follow *").bool("ok") == true)
        let ensured = try await app.run("ensure extras")
        #expect(ensured.bool("ok") == true, "\(ensured.object)\n\(daemon.standardError)")
        #expect(ensured.bool("available") == true)
        try await app.wait("the updates of extras to end", where: { $0.string("update") == "end" })
        let kinds = Self.updates(app, "extras").compactMap { $0.string("update") }
        #expect(kinds.first == "began", "\(kinds)")
        #expect(kinds.suffix(2) == ["finished", "end"], "\(kinds)")
        #expect(Set(kinds).isSubset(of: ["began", "downloading", "finished", "end"]), "\(kinds)")
        // The sequence of all packs saw it too (and goes on).
        try await app.wait("the all-packs sequence to see extras finish") {
            $0.string("follower") == "*" && $0.string("update") == "finished" && $0.string("pack") == "extras"
        }
        let progress = Self.updates(app, "extras").filter { $0.string("update") == "downloading" }
        #expect(progress.allSatisfy { ($0.int("completed") ?? -1) <= ($0.int("total") ?? 0) })

        // Files in the shared namespace of all local packs, through contents, descriptor and url.
        let read = try await app.run("read extras/x.bin")
        #expect(read.string("sha256") == Self.sha256(extra) && read.int("size") == extra.count, "\(read.object)")
        let viaDescriptor = try await app.run("fd levels/l1.bin")
        #expect(viaDescriptor.string("sha256") == Self.sha256(level), "\(viaDescriptor.object)")
        #expect(try await app.run("read base/config.bin base").string("sha256") == Self.sha256(config))
        let url = try await app.run("url levels")
        // Through the app's own folder (`CONTAINER/AppAssetPacks/APP`), one namespace per app.
        let ownFolder = daemon.stateDirectory + "/groups/\(PackFixture.group)/AppAssetPacks/\(PackFixture.app)"
        #expect(url.string("path") == ownFolder + "/levels/levels", "\(url.object)")
        // Not in that pack / in none / outside the packs: fileNotFound (1); a pack not local: 0.
        for (command, code) in [
            ("read levels/l1.bin base", 1), ("read nothing.bin", 1), ("fd ../../etc/passwd", 1),
            ("read /etc/passwd", 1), ("read x.bin nosuchpack", 0),
        ] {
            let refused = try await app.run(command)
            #expect(refused.bool("ok") == false, "\(command): \(refused.object)")
            let error = refused["error"] as? [String: Any]
            #expect(error?["domain"] as? String == "BAManagedErrorDomain", "\(command): \(refused.object)")
            #expect(error?["code"] as? Int == code, "\(command): \(refused.object)")
        }
        let unknown = try await app.run("apack nosuchpack")
        #expect(unknown.errorCode == 0, "\(unknown.object)")

        // remove: the files go, the pack stays available to download. A process still reading
        // the removed version does not stop it from being downloaded again at once.
        let held = try #require(FileHandle(forReadingAtPath: PackFixture.packPath(daemon, "extras") + "/extras/x.bin"))
        defer { try? held.close() }
        #expect(try await app.run("removepack extras").bool("ok") == true)
        #expect(try await app.run("local extras")["available"] as? Bool == false)
        let again = try await app.run("ensure extras")
        #expect(again.bool("ok") == true, "\(again.object)\n\(daemon.standardError)")
        #expect(try await app.run("read extras/x.bin").string("sha256") == Self.sha256(extra))
        #expect(try held.readToEnd().map { [UInt8]($0) } == extra)

        // checkForUpdates: levels has a version 2, extras is no longer published.
        level = PackFixture.random(700_000, seed: 120)
        try fixture.write(pack: "levels", policy: PackFixture.prefetch, files: ["l1.bin": level])
        try FileManager.default.removeItem(atPath: fixture.publish + "/packs/extras")
        try await fixture.publish(["levels"], version: 2)
        let check = try await app.run("check")
        #expect(check.bool("ok") == true, "\(check.object)")
        #expect(check["updating"] as? [String] == ["levels"], "\(check.object)")
        #expect(check["removed"] as? [String] == ["extras"], "\(check.object)")
        let relative = try await app.run("relstatus levels 2").int("status") ?? 0
        #expect(relative & (1 << 6) != 0, "\(relative)")  // downloaded (version 1 or already 2)
        let latest = try await app.run("ensure levels latest")
        #expect(latest.bool("ok") == true, "\(latest.object)")
        #expect(try await app.run("apack levels").int("version") == 2)
        #expect(try await app.run("relstatus levels 2").int("status") == (1 << 6 | 1 << 2))  // downloaded, upToDate
        let newer = try await app.run("relstatus levels 3").int("status") ?? 0
        #expect(newer & (1 << 3) != 0, "\(newer)")  // outOfDate against a version 3
        #expect(try await app.run("read levels/l1.bin").string("sha256") == Self.sha256(level))
        #expect(try await app.run("local extras")["available"] as? Bool == false)
    }

    @Test("cancelling the Progress of an on-demand download cancels it: ensure throws, the pack stays not local")
    func cancelThroughProgress() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        _ = try await Self.publishStalledBigPack(fixture, seed: 21)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        let app = try TestApp(
            socketPath: daemon.socketPath, bundleIdentifier: PackFixture.app, group: PackFixture.group)
        defer { app.kill() }

        #expect(try await app.run("follow big").bool("ok") == true)
        app.send("ensure big")
        try await app.wait("a progress update of big", where: { $0.string("update") == "downloading" })
        #expect(try await app.run("cancelprogress big").bool("ok") == true)
        let ensured = try await app.wait("ensure's result", where: { $0.command == "ensure" })
        #expect(ensured.first?.bool("ok") == false, "\(ensured.first?.object ?? [:])")
        #expect(
            (ensured.first?["error"] as? [String: Any])?["domain"] as? String == "Swift.CancellationError",
            "\(ensured.first?.object ?? [:])")
        try await app.wait("the updates of big to end", where: { $0.string("update") == "end" })
        #expect(Self.updates(app, "big").compactMap { $0.string("update") }.suffix(2) == ["failed", "end"])
        let packs = try await fixture.packs(daemon)
        #expect(packs["big"]?["localVersion"] == nil, "\(packs)")
        #expect((packs["big"]?["status"] as? String)?.contains("downloading") == false, "\(packs)")
        #expect(try await app.run("local big")["available"] as? Bool == false)
    }
}

extension AssetPackManagerTests {
    /// The app's Info.plist, with or without `BAHasManagedAssetPacks`.
    static func writeInfo(_ fixture: PackFixture, version: String, declaresPacks: Bool) throws {
        var info: [String: Any] = [
            "CFBundleIdentifier": PackFixture.app, "CFBundleShortVersionString": version,
            "BAAppGroupID": PackFixture.group, "BAManifestURL": fixture.server.url("/manifest.json"),
        ]
        if declaresPacks { info["BAHasManagedAssetPacks"] = true }
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: fixture.appDirectory + "/Info.plist"))
    }

    @Test("the first use of the manager opts an app into managed packs, and its next update keeps them")
    func firstUseOptsIn() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let config = PackFixture.random(50_000, seed: 31)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["config.bin": config])
        try fixture.write(pack: "extras", policy: PackFixture.onDemand, files: ["x.bin": [7, 7, 7]])
        try await fixture.publish(["base", "extras"], version: 1)
        try Self.writeInfo(fixture, version: "1.0", declaresPacks: false)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        #expect(try await fixture.packs(daemon).isEmpty, "no packs before the app opts in")

        let app = try TestApp(
            socketPath: daemon.socketPath, bundleIdentifier: PackFixture.app, group: PackFixture.group)
        defer { app.kill() }
        let all = try await app.run("apacks")
        #expect((all["packs"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["base", "extras"])
        // The first installation's policies now apply: the essential pack comes without asking.
        _ = try await fixture.waitForPacks(daemon, "base to be local") { $0["base"]?["localVersion"] as? Int == 1 }
        #expect(try await app.run("read base/config.bin").string("sha256") == Self.sha256(config))
        #expect(await daemon.logged("opted into managed asset packs by using AssetPackManager"))

        // An update whose Info.plist still does not declare packs keeps them.
        try Self.writeInfo(fixture, version: "1.1", declaresPacks: false)
        let update = try await runProcess(ba, ["update", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(update.status == 0, "\(update.stdout)\(update.stderr)")
        let after = try await fixture.packs(daemon)
        #expect(after["base"]?["localVersion"] as? Int == 1, "\(after)")
        #expect(try await app.run("local base")["available"] as? Bool == true)
    }
}

extension AssetPackManagerTests {
    @Test(
        "basd killed (SIGKILL) during an app's ensureLocalAvailability: it reconnects, asks again and returns once the pack is local"
    )
    func ensureSurvivesABasdRestart() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let (big, stalled) = try await Self.publishStalledBigPack(fixture, seed: 41)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        let app = try TestApp(
            socketPath: daemon.socketPath, bundleIdentifier: PackFixture.app, group: PackFixture.group)
        defer { app.kill() }

        #expect(try await app.run("follow big").bool("ok") == true)
        app.send("ensure big")
        try await app.wait("a progress update of big", where: { $0.string("update") == "downloading" })
        // basd dies mid-download; the CDN recovers; a new basd starts on the same state.
        daemon.stop()
        for path in stalled { fixture.server.setBehavior(nil, for: path) }
        let again = try await daemon.restarted()
        defer { again.kill() }
        let ensured = try await app.wait(timeout: 60, "ensure's result", where: { $0.command == "ensure" })
        #expect(ensured.first?.bool("ok") == true, "\(ensured.first?.object ?? [:])\n\(app.child.stderrLines)")
        #expect(try await app.run("read big/big.bin").string("sha256") == Self.sha256(big))
        // The per-pack sequence went on across the new connection and ended with the download.
        try await app.wait("the updates of big to end", where: { $0.string("update") == "end" })
        #expect(Self.updates(app, "big").compactMap { $0.string("update") }.suffix(2) == ["finished", "end"])
    }
}

extension AssetPackManagerTests {
    @Test("no opt-in when the app's BAManifestURL is not a download manifest of packs: its updates still succeed")
    func noOptInWithoutAPackManifest() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        // An extension's manifest (not packs) at BAManifestURL.
        try Data(#"{"assets": []}"#.utf8).write(to: URL(fileURLWithPath: fixture.publish + "/manifest.json"))
        try Self.writeInfo(fixture, version: "1.0", declaresPacks: false)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        let app = try TestApp(
            socketPath: daemon.socketPath, bundleIdentifier: PackFixture.app, group: PackFixture.group)
        defer { app.kill() }
        let all = try await app.run("apacks")
        #expect(all.bool("ok") == true && (all["packs"] as? [Any])?.isEmpty == true, "\(all.object)")
        #expect(try await app.run("apack base").errorCode == 0)
        #expect(await daemon.logged("does not get managed asset packs after all"))
        try Self.writeInfo(fixture, version: "1.1", declaresPacks: false)
        let update = try await runProcess(ba, ["update", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(update.status == 0, "\(update.stdout)\(update.stderr)")
        #expect(try await fixture.packs(daemon).isEmpty)
    }
}
