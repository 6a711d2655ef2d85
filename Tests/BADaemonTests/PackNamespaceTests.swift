import BAAssetServer
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 33, parts 5 and 6, with a real basd and a loopback server: each app of an app group
/// reads its own packs (`CONTAINER/AppAssetPacks/APP`), and an uninstall leaves the others'
/// intact; `ba packs remove` in any phase leaves the pack absent, also after a restart; what an
/// interrupted or superseded install leaves is cleaned; files install readable; a folder of the
/// app's at `CONTAINER/AssetPacks` fails `ba install` with what to move.
@Suite("asset packs: one namespace per app, removal and cleanup", .timeLimit(.minutes(5)))
struct PackNamespaceTests {
    let ba = BuildProducts.executable("ba")
    static let second = "com.example.packs.second"

    /// `ba packs --app APP --json`'s packs, by id.
    func packs(_ daemon: DaemonProcess, app: String = PackFixture.app) async throws -> [String: [String: Any]] {
        let listed = try await runProcess(ba, ["packs", "--app", app, "--json", "--socket", daemon.socketPath])
        guard listed.status == 0,
            let object = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any],
            let packs = object["packs"] as? [[String: Any]]
        else { throw HarnessError("ba packs failed: \(listed.stdout)\(listed.stderr)") }
        return Dictionary(packs.map { (($0["assetPackID"] as? String) ?? "", $0) }, uniquingKeysWith: { a, _ in a })
    }

    static func container(_ daemon: DaemonProcess) -> String {
        daemon.stateDirectory + "/groups/" + PackFixture.group
    }

    /// `ROOT/.background-assets/packs/ID` of the fixture's app: its versions and staging folders.
    static func versions(_ daemon: DaemonProcess, _ id: String) -> String {
        daemon.stateDirectory + "/packs/\(PackFixture.app)/.background-assets/packs/" + id
    }

    static func names(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    @Test("two apps of one group each read their own packs; uninstalling one leaves the other's packs and links")
    func twoAppsOneGroup() async throws {
        let first = try await PackFixture.make()
        defer { first.remove() }
        let second = try await PackFixture.make()
        defer { second.remove() }
        // The same pack ID in both apps, with other bytes.
        let mine = PackFixture.random(200_000, seed: 61)
        let theirs = PackFixture.random(200_000, seed: 62)
        try first.write(pack: "base", policy: PackFixture.essential, files: ["x.bin": mine])
        try second.write(pack: "base", policy: PackFixture.essential, files: ["x.bin": theirs])
        try await first.publish(["base"], version: 1)
        try await second.publish(["base"], version: 1)
        let info: [String: Any] = [
            "CFBundleIdentifier": Self.second, "CFBundleShortVersionString": "1.0", "BAAppGroupID": PackFixture.group,
            "BAManifestURL": second.server.url("/manifest.json"), "BAHasManagedAssetPacks": true,
        ]
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: second.appDirectory + "/Info.plist"))
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        for fixture in [first, second] {
            let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
            #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        }
        let container = Self.container(daemon)
        let firstFile = container + "/AppAssetPacks/\(PackFixture.app)/base/base/x.bin"
        let secondFile = container + "/AppAssetPacks/\(Self.second)/base/base/x.bin"
        #expect(AssetPackTests.same(firstFile, mine))
        #expect(AssetPackTests.same(secondFile, theirs))
        // The group's AssetPacks stays with the app that had it first.
        #expect(AssetPackTests.same(container + "/AssetPacks/base/base/x.bin", mine))
        let listed = try await packs(daemon, app: Self.second)
        #expect(listed["base"]?["path"] as? String == container + "/AppAssetPacks/\(Self.second)/base", "\(listed)")

        // Each app, through AssetPackManager, reads its own.
        for (app, bytes) in [(PackFixture.app, mine), (Self.second, theirs)] {
            let client = try TestApp(socketPath: daemon.socketPath, bundleIdentifier: app, group: PackFixture.group)
            defer { client.kill() }
            let read = try await client.run("read base/x.bin")
            #expect(read.string("sha256") == AssetPackManagerTests.sha256(bytes), "\(app): \(read.object)")
        }

        let uninstall = try await runProcess(ba, ["uninstall", PackFixture.app, "--socket", daemon.socketPath])
        #expect(uninstall.status == 0, "\(uninstall.stdout)\(uninstall.stderr)")
        // The other app's packs, its link, and a group link that leads to them now.
        #expect(AssetPackTests.same(secondFile, theirs))
        #expect(!Self.exists(container + "/AppAssetPacks/\(PackFixture.app)"))
        #expect(AssetPackTests.same(container + "/AssetPacks/base/base/x.bin", theirs))
        let after = try await packs(daemon, app: Self.second)
        #expect(after["base"]?["localVersion"] as? Int == 1, "\(after)")
        let client = try TestApp(socketPath: daemon.socketPath, bundleIdentifier: Self.second, group: PackFixture.group)
        defer { client.kill() }
        let read = try await client.run("read base/x.bin")
        #expect(read.string("sha256") == AssetPackManagerTests.sha256(theirs), "\(read.object)")
    }

    /// Deterministic: basd's test hook (`BASD_TEST_PACK_SWITCH_GATE`, debug builds only) holds the
    /// job's queue after version 1 is complete on disk and before its link is switched; the
    /// removal lands in exactly that window, and then the queue goes on.
    @Test("ba packs remove between a version's completion and its switch: the pack stays absent, also after a restart")
    func removeDuringFinish() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        try fixture.write(
            pack: "base", policy: PackFixture.essential, files: ["a.bin": PackFixture.random(1000, seed: 1)])
        try fixture.write(
            pack: "extras", policy: PackFixture.onDemand, files: ["x.bin": PackFixture.random(300_000, seed: 71)])
        try await fixture.publish(["base", "extras"], version: 1)
        let gate = fixture.directory.path + "/gate"
        try FileManager.default.createDirectory(atPath: gate, withIntermediateDirectories: true)
        let daemon = try await DaemonProcess.start(environment: ["BASD_TEST_PACK_SWITCH_GATE": gate])
        var running = daemon
        defer { running.kill() }
        // The essential pack passes the gate as soon as it reaches it.
        try Data().write(to: URL(fileURLWithPath: gate + "/\(PackFixture.app)-base-1.go"))
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")

        let ensure = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "extras", "--no-wait", "--socket", daemon.socketPath])
        #expect(ensure.status == 0, "\(ensure.stdout)\(ensure.stderr)")
        let paused = gate + "/\(PackFixture.app)-extras-1.paused"
        _ = try await CLIQueries.poll(
            "extras 1 to be complete and held before its switch", daemon, timeout: 60,
            read: { FileManager.default.fileExists(atPath: paused) }, until: { $0 })
        #expect(Self.names(Self.versions(daemon, "extras")) == ["1"])
        let remove = try await runProcess(
            ba, ["packs", "remove", PackFixture.app, "extras", "--socket", daemon.socketPath])
        #expect(remove.status == 0, "\(remove.stdout)\(remove.stderr)")
        try Data().write(to: URL(fileURLWithPath: gate + "/\(PackFixture.app)-extras-1.go"))

        let link = daemon.stateDirectory + "/packs/\(PackFixture.app)/AssetPacks/extras"
        _ = try await CLIQueries.poll(
            "extras' files to go", daemon, timeout: 30, read: { Self.names(Self.versions(daemon, "extras")) },
            until: { $0.isEmpty })
        #expect(!Self.exists(link))
        let listed = try await packs(daemon)
        #expect(listed["extras"]?["localVersion"] == nil, "\(listed)")
        #expect((listed["extras"]?["status"] as? String)?.contains("downloading") == false, "\(listed)")

        daemon.send(SIGKILL)
        #expect(daemon.waitForExit(timeout: 20) != nil)
        running = try await daemon.restarted()
        let restarted = try await packs(running)
        #expect(restarted["extras"]?["localVersion"] == nil, "\(restarted)")
        #expect(restarted["base"]?["localVersion"] as? Int == 1, "\(restarted)")
        #expect(!Self.exists(link))
    }

    @Test("ba packs remove mid-download removes the staging folder; it stays absent after a restart")
    func removeMidDownload() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        try fixture.write(
            pack: "base", policy: PackFixture.essential, files: ["a.bin": PackFixture.random(1000, seed: 2)])
        try fixture.write(
            pack: "extras", policy: PackFixture.onDemand,
            files: ["x.bin": PackFixture.random(1 << 20, seed: 72), "y.bin": PackFixture.random(1 << 20, seed: 73)])
        try await fixture.publish(["base", "extras"], version: 1, bundleSize: 1 << 20)
        let daemon = try await DaemonProcess.start()
        var running = daemon
        defer { running.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        try await fixture.ensureStalled("extras", daemon)
        _ = try await CLIQueries.poll(
            "extras' staging folder", daemon, timeout: 60, read: { Self.names(Self.versions(daemon, "extras")) },
            until: { $0 == ["1.staging"] })
        // Named by its policy: on demand, requested (fetched at once), never "essential".
        let downloading = try await packs(daemon)
        #expect(
            downloading["extras"]?["requested"] as? Bool == true && downloading["extras"]?["essential"] == nil,
            "\(downloading)")
        _ = try await CLIQueries.poll(
            "the log to name extras' policy", daemon, timeout: 10, read: { daemon.standardError },
            until: {
                $0.contains("asset pack extras of \(PackFixture.app): installing version 1 (on demand, requested)")
            })
        let remove = try await runProcess(
            ba, ["packs", "remove", PackFixture.app, "extras", "--socket", daemon.socketPath])
        #expect(remove.status == 0, "\(remove.stdout)\(remove.stderr)")
        _ = try await CLIQueries.poll(
            "the staging folder to go", daemon, timeout: 30, read: { Self.names(Self.versions(daemon, "extras")) },
            until: { $0.isEmpty })
        fixture.server.setBehavior(nil, for: "/packs/extras/1-0.bundle")
        daemon.send(SIGKILL)
        #expect(daemon.waitForExit(timeout: 20) != nil)
        running = try await daemon.restarted()
        let listed = try await packs(running)
        #expect(listed["extras"]?["localVersion"] == nil, "\(listed)")
        #expect(Self.names(Self.versions(running, "extras")).isEmpty)
        let fetch = running.stateDirectory + "/packs/\(PackFixture.app)/.fetch"
        #expect(Self.names(fetch).isEmpty, "\(Self.names(fetch))")
    }

    @Test("a failed version's staging folder goes when the next version installs")
    func failedStagingGoes() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        try fixture.write(
            pack: "base", policy: PackFixture.essential, files: ["a.bin": PackFixture.random(300_000, seed: 81)])
        try await fixture.publish(["base"], version: 1, bundleSize: 0)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        // Version 2's chunks are missing on the CDN: it fails, its staging folder stays (for a retry).
        try fixture.write(
            pack: "base", policy: PackFixture.essential, files: ["a.bin": PackFixture.random(300_000, seed: 82)])
        try await fixture.publish(["base"], version: 2, bundleSize: 0)
        for name in try fixture.chunkNames(pack: "base", version: 2).subtracting(
            fixture.chunkNames(pack: "base", version: 1))
        {
            fixture.server.setBehavior(.status(404), for: "/chunks/\(name.prefix(2))/\(name)")
        }
        let failed = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "base", "--latest", "--socket", daemon.socketPath])
        #expect(failed.status == 20, "\(failed.stdout)\(failed.stderr)")
        #expect(Self.names(Self.versions(daemon, "base")) == ["1", "2.staging"])
        // Version 3 installs: version 2's staging will never be finished, and goes.
        try fixture.write(
            pack: "base", policy: PackFixture.essential, files: ["a.bin": PackFixture.random(300_000, seed: 83)])
        try await fixture.publish(["base"], version: 3, bundleSize: 0)
        let updated = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "base", "--latest", "--socket", daemon.socketPath])
        #expect(updated.status == 0, "\(updated.stdout)\(updated.stderr)")
        _ = try await CLIQueries.poll(
            "only version 3 to stay", daemon, timeout: 30, read: { Self.names(Self.versions(daemon, "base")) },
            until: { $0 == ["3"] })
    }

    /// The leftovers are planted by hand where a `kill -9` leaves them (in `verify --repair`
    /// between the swap and the damaged copy's removal; mid-fetch), so the test does not depend
    /// on when the kill lands.
    @Test("at start: N.replaced, a staging folder nothing targets and .fetch leftovers go; the local version stays")
    func leftoversAtStart() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let bytes = PackFixture.random(200_000, seed: 91)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": bytes])
        try await fixture.publish(["base"], version: 1)
        let daemon = try await DaemonProcess.start()
        var running = daemon
        defer { running.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        daemon.send(SIGKILL)
        #expect(daemon.waitForExit(timeout: 20) != nil)

        let versions = Self.versions(daemon, "base")
        let fetch = daemon.stateDirectory + "/packs/\(PackFixture.app)/.fetch"
        let planted = [
            versions + "/1.replaced/base/a.bin", versions + "/7.staging/base/a.bin",
            fetch + "/index-base-2-5.json.part", fetch + "/manifest-3.json", fetch + "/base-2/0123abcd",
        ]
        for path in planted {
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data("left".utf8).write(to: URL(fileURLWithPath: path))
        }
        // A damaged copy is read-only, as the version it was.
        #expect(chmod(versions + "/1.replaced/base", 0o555) == 0)

        running = try await daemon.restarted()
        _ = try await CLIQueries.poll(
            "the leftovers to go", running, timeout: 30,
            read: { (Self.names(versions), Self.names(fetch)) }, until: { $0.0 == ["1"] && $0.1.isEmpty })
        #expect(AssetPackTests.same(PackFixture.packPath(running, "base") + "/base/a.bin", bytes))
        let listed = try await packs(running)
        #expect(listed["base"]?["localVersion"] as? Int == 1, "\(listed)")
    }

    @Test("any mode an index gives installs readable and read-only: 0444, or 0555 with an x bit")
    func modes() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let files = ["none.bin": 0o000, "write.bin": 0o200, "exec.bin": 0o100, "plain.bin": 0o644, "tool": 0o755]
        try fixture.write(
            pack: "base", policy: PackFixture.essential,
            files: Dictionary(
                uniqueKeysWithValues: files.keys.enumerated().map { ($1, PackFixture.random(1000, seed: UInt64($0))) }))
        let build = try await runProcess(
            ba,
            [
                "pack", "build", fixture.source + "/base.json", "--version", "1", "-o", fixture.publish,
                "--index-format", "1",
            ])
        #expect(build.status == 0, "\(build.stdout)\(build.stderr)")
        // The publisher's index gives the odd modes (and publishing signs off its new SHA-256).
        let indexPath = fixture.publish + "/packs/base/1.json"
        var index = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: indexPath))) as? [String: Any])
        var entries = try #require(index["files"] as? [[String: Any]])
        for position in entries.indices {
            let name = ((entries[position]["path"] as? String) ?? "").split(separator: "/").last.map(String.init) ?? ""
            guard let mode = files[name] else { throw HarnessError("the index lists \(name)") }
            entries[position]["mode"] = mode
        }
        index["files"] = entries
        try JSONSerialization.data(withJSONObject: index).write(to: URL(fileURLWithPath: indexPath))
        try await fixture.publish([], version: 0)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        for (name, mode) in files {
            let path = PackFixture.packPath(daemon, "base") + "/base/" + name
            var info = stat()
            #expect(stat(path, &info) == 0, "\(name)")
            #expect(
                info.st_mode & 0o7777 == (mode & 0o111 != 0 ? 0o555 : 0o444),
                "\(name): \(String(info.st_mode, radix: 8))")
            #expect(access(path, R_OK) == 0, "\(name)")
        }
    }

    @Test("a folder of the app's at CONTAINER/AssetPacks fails ba install with what to move; it is left alone")
    func realFolderFailsInstall() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        try fixture.write(
            pack: "base", policy: PackFixture.essential, files: ["a.bin": PackFixture.random(1000, seed: 3)])
        try await fixture.publish(["base"], version: 1)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let folder = Self.container(daemon) + "/AssetPacks"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: folder + "/mine.txt"))
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 20, "\(install.stdout)\(install.stderr)")
        #expect(install.stderr.contains(folder) && install.stderr.contains("move it"), "\(install.stderr)")
        #expect(FileManager.default.contents(atPath: folder + "/mine.txt") == Data("mine".utf8))
        // Moved away, the packs come.
        try FileManager.default.moveItem(atPath: folder, toPath: folder + ".moved")
        let check = try await runProcess(ba, ["packs", "check", PackFixture.app, "--socket", daemon.socketPath])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        let ensure = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "base", "--socket", daemon.socketPath])
        #expect(ensure.status == 0, "\(ensure.stdout)\(ensure.stderr)")
        #expect(FileManager.default.fileExists(atPath: PackFixture.packPath(daemon, "base") + "/base/a.bin"))
    }
}
