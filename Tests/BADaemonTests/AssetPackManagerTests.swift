import BAAssetServer
import BATestSupport
import Foundation
import Testing

/// `AssetPackManager` in a real app process (BATestApp, public API only) against a real basd
/// and packs published with `ba pack` on a loopback server.
@Suite("AssetPackManager in an app", .timeLimit(.minutes(5)))
struct AssetPackManagerTests {
    let ba = BuildProducts.executable("ba")

    static func sha256(_ bytes: [UInt8]) -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sha-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try? Data(bytes).write(to: file)
        let output = (try? runProcessBlocking("/usr/bin/sha256sum", [file.path]))?.stdout ?? ""
        return String(output.prefix(64))
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
        let ensured = try await app.run("ensure extras")
        #expect(ensured.bool("ok") == true, "\(ensured.object)\n\(daemon.standardError)")
        #expect(ensured.bool("available") == true)
        try await app.wait("the updates of extras to end", where: { $0.string("update") == "end" })
        let kinds = Self.updates(app, "extras").compactMap { $0.string("update") }
        #expect(kinds.first == "began", "\(kinds)")
        #expect(kinds.suffix(2) == ["finished", "end"], "\(kinds)")
        #expect(Set(kinds).isSubset(of: ["began", "downloading", "finished", "end"]), "\(kinds)")
        let progress = Self.updates(app, "extras").filter { $0.string("update") == "downloading" }
        #expect(progress.allSatisfy { ($0.int("completed") ?? -1) <= ($0.int("total") ?? 0) })

        // Files in the shared namespace of all local packs, through contents, descriptor and url.
        let read = try await app.run("read extras/x.bin")
        #expect(read.string("sha256") == Self.sha256(extra) && read.int("size") == extra.count, "\(read.object)")
        let viaDescriptor = try await app.run("fd levels/l1.bin")
        #expect(viaDescriptor.string("sha256") == Self.sha256(level), "\(viaDescriptor.object)")
        #expect(try await app.run("read base/config.bin base").string("sha256") == Self.sha256(config))
        let url = try await app.run("url levels")
        #expect(url.string("path") == PackFixture.packPath(daemon, "levels") + "/levels", "\(url.object)")
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

        // remove: the files go, the pack stays available to download.
        #expect(try await app.run("removepack extras").bool("ok") == true)
        #expect(try await app.run("local extras")["available"] as? Bool == false)
        #expect(try await app.run("ensure extras").bool("ok") == true)
        #expect(try await app.run("read extras/x.bin").string("sha256") == Self.sha256(extra))

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
        let big = PackFixture.random(3 << 20, seed: 21)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["c.bin": [1, 2, 3]])
        try fixture.write(pack: "big", policy: PackFixture.onDemand, files: ["big.bin": big])
        try await fixture.publish(["base", "big"], version: 1, bundleSize: 0)
        // The first three chunks of big come; the rest stall, so the download stays in progress.
        let index =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: fixture.publish + "/packs/big/1.json"))) as? [String: Any]
        let files = try #require(index?["files"] as? [[String: Any]])
        let chunks = files.flatMap { ($0["chunks"] as? [[String: Any]] ?? []).compactMap { $0["sha256"] as? String } }
        #expect(chunks.count > 8)
        for chunk in chunks.dropFirst(3) {
            fixture.server.setBehavior(.stall(afterBytes: 0), for: "/chunks/\(chunk.prefix(2))/\(chunk)")
        }
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
