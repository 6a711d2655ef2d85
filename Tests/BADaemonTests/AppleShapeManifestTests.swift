import BAHashing
import BAPacks
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 35's done-when for Apple's self-hosted manifest shape: a download manifest written by
/// hand, in this test's own text, from Apple's description of what `ba-package download-manifest
/// create` writes (`{"assetPacks": [{"id", "url", "version", "downloadSize", "downloadPolicy",
/// "host": {"thirdParty": {}}, "userInfo"}]}`), with our index SHA-256 added beside Apple's keys,
/// is installed by a real basd from nginx; a hand-written format 1 manifest (what an app installed
/// before format 3 is served) still installs; an update whose `downloadSize` lies below the
/// index's is refused, the pack's local version staying.
@Suite("Apple's self-hosted manifest shape, end to end", .serialized, .timeLimit(.minutes(5)))
struct AppleShapeManifestTests {
    let ba = BuildProducts.executable("ba")

    /// The SHA-256 (hex) of a published index, and the download size it states.
    static func index(_ fixture: PackFixture, _ id: String, _ version: Int) throws -> (sha256: String, size: Int64) {
        let path = fixture.publish + "/" + PackIndex.indexPath(id: id, version: version)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        return (bytes.withUnsafeBytes { SHA256Hasher.hex(of: $0) }, try PackIndex.read(path).downloadSize)
    }

    func writeManifest(_ fixture: PackFixture, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: fixture.publish + "/manifest.json"))
    }

    @Test(
        "a manifest in Apple's shape, written by hand, installs from nginx; format 1 still does; a lying downloadSize is refused"
    )
    func handWrittenAppleShapeInstalls() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let nginx = try await Nginx.start(root: fixture.publish, directory: fixture.directory.path)
        defer { nginx.stop() }
        try fixture.readManifest(from: nginx.baseURL)

        let levels = PackFixture.random(300_000, seed: 3501)
        let extras = PackFixture.random(40_000, seed: 3502)
        try fixture.write(pack: "levels", policy: PackFixture.essential, files: ["a.bin": levels])
        try fixture.write(pack: "extras", policy: PackFixture.onDemand, files: ["b.bin": extras])
        for id in ["levels", "extras"] {
            let build = try await runProcess(
                ba, ["pack", "build", fixture.source + "/\(id).json", "--version", "1", "-o", fixture.publish])
            #expect(build.status == 0, "\(build.stdout)\(build.stderr)")
        }
        let (levelsSHA, levelsSize) = try Self.index(fixture, "levels", 1)
        let (extrasSHA, extrasSize) = try Self.index(fixture, "extras", 1)
        // Apple's shape, by hand: no formatVersion, Apple's keys, a key of nobody's, and
        // indexSHA256 beside them.
        try writeManifest(
            fixture,
            """
            {
              "assetPacks": [
                {
                  "id": "levels",
                  "url": "\(nginx.baseURL)/packs/levels/1.json",
                  "version": 1,
                  "downloadSize": \(levelsSize),
                  "downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation", "subsequentUpdate"]}},
                  "host": {"thirdParty": {}},
                  "userInfo": {"world": 1},
                  "indexSHA256": "\(levelsSHA)"
                },
                {
                  "id": "extras",
                  "url": "\(nginx.baseURL)/packs/extras/1.json",
                  "version": 1,
                  "downloadSize": \(extrasSize),
                  "downloadPolicy": {"onDemand": {}},
                  "host": {"thirdParty": {}},
                  "indexSHA256": "\(extrasSHA)",
                  "notes": "a key basd does not know"
                }
              ]
            }
            """)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        #expect(
            FileManager.default.contents(atPath: PackFixture.packPath(daemon, "levels") + "/levels/a.bin")
                == Data(levels))
        var packs = try await fixture.packs(daemon)
        #expect(packs["levels"]?["localVersion"] as? Int == 1, "\(packs)")
        #expect(packs["extras"]?["localVersion"] == nil && packs["extras"]?["serverVersion"] as? Int == 1, "\(packs)")
        #expect((packs["levels"]?["userInfo"] as? String)?.contains("world") == true, "\(packs)")
        let ensure = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "extras", "--socket", daemon.socketPath])
        #expect(ensure.status == 0, "\(ensure.stdout)\(ensure.stderr)")
        #expect(
            FileManager.default.contents(atPath: PackFixture.packPath(daemon, "extras") + "/extras/b.bin")
                == Data(extras))
        // Every file came from nginx.
        #expect(nginx.requests(since: 0).contains { $0.path == "/packs/extras/1.json" })

        // Version 2 of levels, in a hand-written format 1 manifest (what an app installed before
        // format 3 is served): it still installs.
        let levels2 = PackFixture.random(300_000, seed: 3503)
        try fixture.write(pack: "levels", policy: PackFixture.essential, files: ["a.bin": levels2])
        let build = try await runProcess(
            ba, ["pack", "build", fixture.source + "/levels.json", "--version", "2", "-o", fixture.publish])
        #expect(build.status == 0, "\(build.stdout)\(build.stderr)")
        let (sha2, size2) = try Self.index(fixture, "levels", 2)
        func formatOne(downloadSize: Int64) -> String {
            """
            {"formatVersion": 1, "assetPacks": [
              {"assetPackID": "levels", "version": 2, "downloadSize": \(downloadSize),
               "downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation", "subsequentUpdate"]}},
               "indexURL": "\(nginx.baseURL)/packs/levels/2.json", "indexSHA256": "\(sha2)"},
              {"assetPackID": "extras", "version": 1, "downloadSize": \(extrasSize), "downloadPolicy": {"onDemand": {}},
               "indexURL": "\(nginx.baseURL)/packs/extras/1.json", "indexSHA256": "\(extrasSHA)"}]}
            """
        }
        // First in Apple's shape with a downloadSize that lies (below what the index needs): the
        // update is refused, version 1 stays.
        try writeManifest(
            fixture,
            """
            {"assetPacks": [{"id": "levels", "url": "\(nginx.baseURL)/packs/levels/2.json", "version": 2,
              "downloadSize": 1000, "host": {"thirdParty": {}}, "indexSHA256": "\(sha2)",
              "downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation", "subsequentUpdate"]}}},
             {"id": "extras", "url": "\(nginx.baseURL)/packs/extras/1.json", "version": 1, "downloadSize": \(extrasSize),
              "downloadPolicy": {"onDemand": {}}, "indexSHA256": "\(extrasSHA)"}]}
            """)
        let lied = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "levels", "--latest", "--socket", daemon.socketPath])
        #expect(lied.status == 20, "\(lied.stdout)\(lied.stderr)")
        #expect(lied.stderr.contains("more than the 1000"), "\(lied.stderr)")
        #expect(
            FileManager.default.contents(atPath: PackFixture.packPath(daemon, "levels") + "/levels/a.bin")
                == Data(levels))
        try writeManifest(fixture, formatOne(downloadSize: size2))
        let update = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "levels", "--latest", "--socket", daemon.socketPath])
        #expect(update.status == 0, "\(update.stdout)\(update.stderr)")
        packs = try await fixture.packs(daemon)
        #expect(packs["levels"]?["localVersion"] as? Int == 2, "\(packs)")
        #expect(
            FileManager.default.contents(atPath: PackFixture.packPath(daemon, "levels") + "/levels/a.bin")
                == Data(levels2))
        #expect(try await runProcess(ba, ["status", "--socket", daemon.socketPath]).status == 0)
    }
}
