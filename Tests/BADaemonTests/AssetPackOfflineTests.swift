import BAAssetServer
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// An app reads its packs with basd stopped: packs installed by a real basd from a loopback
/// server, basd killed, then BATestApp (public API only) started with basd's state folder as its
/// default (`BA_STATE_DIR`, as a real app has basd's default) and never reaching basd.
@Suite("AssetPackManager without basd", .timeLimit(.minutes(5)))
struct AssetPackOfflineTests {
    let ba = BuildProducts.executable("ba")

    /// Makes `path` (a read-only folder of a version) writable, runs `body`, and makes it read-only again.
    static func writable(_ path: String, _ body: () throws -> Void) throws {
        chmod(path, 0o755)
        defer { chmod(path, 0o555) }
        try body()
    }

    @Test(
        "contents, descriptor, url, assetPackIsAvailableLocally, localStatus, localVersion and localSize from the disk with basd stopped; links planted in the packs are not followed"
    )
    func readsWithoutBasd() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let config = PackFixture.random(200_000, seed: 51)
        let level = PackFixture.random(90_000, seed: 52)
        try fixture.write(
            pack: "base", policy: PackFixture.essential, files: ["config.bin": config, "levels/l1.bin": level])
        try fixture.write(pack: "extras", policy: PackFixture.onDemand, files: ["x.bin": [7, 7, 7]])
        try await fixture.publish(["base", "extras"], version: 1)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        _ = try await fixture.waitForPacks(daemon, "base to be local") { $0["base"]?["localVersion"] as? Int == 1 }
        daemon.stop()

        let app = try TestApp(
            socketPath: daemon.socketPath, bundleIdentifier: PackFixture.app, group: PackFixture.group,
            environment: ["BA_STATE_DIR": daemon.stateDirectory])
        defer { app.kill() }
        // What needs basd says it is not there.
        #expect(try await app.run("apacks").errorCode == 55)

        // The files, through each call, from the version basd left.
        let read = try await app.run("read base/config.bin")
        #expect(read.string("sha256") == AssetPackManagerTests.sha256(config), "\(read.object)")
        #expect(
            try await app.run("read base/levels/l1.bin base").string("sha256") == AssetPackManagerTests.sha256(level))
        let viaDescriptor = try await app.run("fd base/levels/l1.bin")
        #expect(viaDescriptor.string("sha256") == AssetPackManagerTests.sha256(level), "\(viaDescriptor.object)")
        let links = daemon.stateDirectory + "/packs/\(PackFixture.app)/AssetPacks"
        #expect(try await app.run("url base/levels").string("path") == links + "/base/base/levels")
        let local = try await app.run("local base")
        #expect(local["available"] as? Bool == true, "\(local.object)")
        #expect(local.int("status") == 1 << 6, "\(local.object)")  // downloaded: no manifest to say more
        let extras = try await app.run("local extras")
        #expect(extras["available"] as? Bool == false && extras.int("status") == 0, "\(extras.object)")
        // Local version and size (27.2), from the disk.
        #expect(try await app.run("lversion base").int("version") == 1)
        #expect(try await app.run("lsize base logical").int("size") == config.count + level.count)
        let allocated = try await app.run("lsize base allocated").int("size") ?? -1
        #expect(allocated > 0 && allocated % 512 == 0, "allocated \(allocated)")
        for command in ["lversion extras", "lsize extras logical", "lsize ../base allocated"] {
            let refused = try await app.run(command)
            #expect(refused.bool("ok") == false && refused.errorCode == 0, "\(command): \(refused.object)")
        }
        for (command, code) in [("read x.bin extras", 0), ("read extras/x.bin", 1), ("read base/nothing.bin", 1)] {
            let refused = try await app.run(command)
            #expect(refused.bool("ok") == false && refused.errorCode == code, "\(command): \(refused.object)")
        }

        // Planted by another process of the user: a link to a file outside in a version, a
        // FIFO, a pack link out of the tree or not of basd's form. None is followed or opened.
        let version = daemon.stateDirectory + "/packs/\(PackFixture.app)/.background-assets/packs/base/1/base"
        try Self.writable(version) {
            try FileManager.default.createSymbolicLink(atPath: version + "/passwd", withDestinationPath: "/etc/passwd")
            try FileManager.default.createSymbolicLink(atPath: version + "/etc", withDestinationPath: "/etc")
            #expect(mkfifo(version + "/fifo", 0o644) == 0)
        }
        try FileManager.default.createSymbolicLink(atPath: links + "/outside", withDestinationPath: "/etc")
        try FileManager.default.createSymbolicLink(
            atPath: links + "/climbing", withDestinationPath: "../.background-assets/packs/base/1/../../../../..")
        try FileManager.default.createSymbolicLink(
            atPath: links + "/other", withDestinationPath: "../.background-assets/packs/base/1")
        for (command, code) in [
            ("read base/passwd", 1), ("fd base/passwd", 1), ("read base/etc/passwd", 1), ("read base/fifo", 1),
            ("fd base/fifo", 1), ("read passwd outside", 0), ("read passwd climbing", 0),
            ("read base/config.bin other", 0),
        ] {
            let refused = try await app.run(command, timeout: 10)
            #expect(refused.bool("ok") == false && refused.errorCode == code, "\(command): \(refused.object)")
        }
        #expect(try await app.run("url base/etc").bool("ok") == false)
        for pack in ["outside", "climbing", "other"] {
            #expect(try await app.run("local \(pack)")["available"] as? Bool == false, "\(pack)")
        }
        // Planted links and FIFOs are not counted in a size, nor followed; planted packs have none.
        #expect(try await app.run("lsize base logical").int("size") == config.count + level.count)
        for pack in ["outside", "climbing", "other"] {
            #expect(try await app.run("lversion \(pack)").errorCode == 0, "\(pack)")
            #expect(try await app.run("lsize \(pack) logical").errorCode == 0, "\(pack)")
        }
        // The pack itself still reads.
        #expect(try await app.run("read base/config.bin").string("sha256") == AssetPackManagerTests.sha256(config))
    }
}
