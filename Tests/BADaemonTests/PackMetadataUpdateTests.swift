import BAPacks
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Index format 2 end to end (issue 34, points 4 and 8): real basd, real nginx on loopback. A
/// small update fetches the parts of what changed (counted from nginx's access log), and a
/// publish folder pruned to its newest version still installs and updates.
@Suite("pack metadata updates", .serialized)
struct PackMetadataUpdateTests {
    let ba = BuildProducts.executable("ba")

    /// 80 files of 384 KiB: the source of version `version`, files in `changed` rewritten.
    static func files(changed: Set<Int>, salt: UInt64) -> [String: [UInt8]] {
        Dictionary(
            uniqueKeysWithValues: (0..<80).map { number in
                let seed = UInt64(number) + (changed.contains(number) ? salt * 1000 : 0)
                return (String(format: "level-%03d.bin", number), PackFixture.random(384 << 10, seed: 500 + seed))
            })
    }

    @Test("a 2-file update fetches its chunks and the index parts that changed; prune keeps what devices need")
    func smallUpdateAndPrune() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let nginx = try await Nginx.start(root: fixture.publish, directory: fixture.directory.path)
        defer { nginx.stop() }
        try fixture.readManifest(from: nginx.baseURL)
        func publish(_ version: Int) async throws {
            let build = try await runProcess(
                ba,
                ["pack", "build", fixture.source + "/levels.json", "--version", String(version), "-o", fixture.publish])
            #expect(build.status == 0, "\(build.stdout)\(build.stderr)")
            let published = try await runProcess(ba, ["pack", "publish", fixture.publish, "--base-url", nginx.baseURL])
            #expect(published.status == 0, "\(published.stdout)\(published.stderr)")
        }
        try fixture.write(pack: "levels", policy: PackFixture.essential, files: Self.files(changed: [], salt: 0))
        try await publish(1)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")

        // Version 2 rewrites 2 of the 120 files.
        let v1 = try PackIndexRoot.decode(
            Array(try Data(contentsOf: URL(fileURLWithPath: fixture.publish + "/packs/levels/1.json"))))
        try fixture.write(pack: "levels", policy: PackFixture.essential, files: Self.files(changed: [7, 68], salt: 1))
        try await publish(2)
        let root = try PackIndexRoot.decode(
            Array(try Data(contentsOf: URL(fileURLWithPath: fixture.publish + "/packs/levels/2.json"))))
        #expect(root.parts.count >= 3)
        let mark = nginx.mark()
        let update = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "levels", "--latest", "--socket", daemon.socketPath])
        #expect(update.status == 0, "\(update.stdout)\(update.stderr)")
        let fetched = nginx.requests(since: mark)
        let total = fetched.reduce(0) { $0 + $1.bytes }
        let metadata = fetched.filter { !$0.path.hasPrefix("/chunks/") && !$0.path.hasSuffix(".bundle") }
            .reduce(0) { $0 + $1.bytes }
        let parts = fetched.filter { $0.path.hasPrefix("/meta/") }
        let changedBytes = 2 * (384 << 10)
        // Only the parts of the two files (one each, or one for both): the parts version 1 had
        // are never fetched again, and the metadata is a fraction of one whole (format 1) index.
        let newParts = Set(root.parts.map { "/" + PackIndexRoot.partPath($0.sha256) })
            .subtracting(v1.parts.map { "/" + PackIndexRoot.partPath($0.sha256) })
        #expect((1...2).contains(newParts.count))
        #expect(Set(parts.map(\.path)) == newParts && parts.count == newParts.count, "\(fetched.map(\.path))")
        let wholeIndex = try JSONEncoder().encode(try PackIndex.read(fixture.publish + "/packs/levels/2.json")).count
        #expect(metadata * 2 < wholeIndex, "metadata \(metadata), a format 1 index \(wholeIndex)")
        #expect(Double(total) <= 1.05 * Double(changedBytes), "fetched \(total) for \(changedBytes) changed")
        let v2 = try FileManager.default.contentsOfDirectory(atPath: PackFixture.packPath(daemon, "levels") + "/levels")
        #expect(v2.count == 80)

        // Version 3 (2 more files); a lying CDN first serves other bytes under a new part's
        // name: refused by its SHA-256 before it is decompressed, version 2 stays.
        try fixture.write(
            pack: "levels", policy: PackFixture.essential, files: Self.files(changed: [7, 68, 30, 31], salt: 2))
        try await publish(3)
        let v3 = try PackIndexRoot.decode(
            Array(try Data(contentsOf: URL(fileURLWithPath: fixture.publish + "/packs/levels/3.json"))))
        let fresh = try #require(v3.parts.first { part in !root.parts.contains { $0.sha256 == part.sha256 } })
        let freshPath = fixture.publish + "/" + PackIndexRoot.partPath(fresh.sha256)
        let genuine = try Data(contentsOf: URL(fileURLWithPath: freshPath))
        var lie = genuine
        lie[lie.count / 2] ^= 0xFF
        try lie.write(to: URL(fileURLWithPath: freshPath))
        let lied = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "levels", "--latest", "--socket", daemon.socketPath])
        #expect(lied.status == 20, "\(lied.stdout)\(lied.stderr)")
        #expect(lied.stderr.contains("the CDN serves another file"), "\(lied.stderr)")
        #expect((try await fixture.packs(daemon))["levels"]?["localVersion"] as? Int == 2)
        try genuine.write(to: URL(fileURLWithPath: freshPath))
        // Then the folder pruned to its newest version.
        let prune = try await runProcess(ba, ["pack", "prune", fixture.publish, "--keep", "1", "--grace", "0"])
        #expect(prune.status == 0, "\(prune.stdout)\(prune.stderr)")
        #expect(
            prune.stdout.contains("removed packs/levels/1.json") && prune.stdout.contains("freed"), "\(prune.stdout)")
        #expect(!FileManager.default.fileExists(atPath: fixture.publish + "/packs/levels/2.json"))
        let verify = try await runProcess(ba, ["pack", "verify", fixture.publish])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        // The device (at version 2, whose index the folder no longer has) updates from it.
        let toThree = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "levels", "--latest", "--socket", daemon.socketPath])
        #expect(toThree.status == 0, "\(toThree.stdout)\(toThree.stderr)")
        #expect((try await fixture.packs(daemon))["levels"]?["localVersion"] as? Int == 3)
        // basd keeps the parts of its local version's index, and no other version's.
        let store = daemon.stateDirectory + "/packs/\(PackFixture.app)/meta"
        var kept: Set<String> = []
        for prefix in try FileManager.default.contentsOfDirectory(atPath: store) {
            kept.formUnion(try FileManager.default.contentsOfDirectory(atPath: store + "/" + prefix))
        }
        #expect(kept == Set(v3.parts.map(\.sha256)))
        // And a device without it installs it whole from the pruned folder.
        let removed = try await runProcess(
            ba, ["packs", "remove", PackFixture.app, "levels", "--socket", daemon.socketPath])
        #expect(removed.status == 0, "\(removed.stdout)\(removed.stderr)")
        let again = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "levels", "--socket", daemon.socketPath])
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        let source = fixture.source + "/levels/level-031.bin"
        let local = PackFixture.packPath(daemon, "levels") + "/levels/level-031.bin"
        #expect(FileManager.default.contents(atPath: local) == FileManager.default.contents(atPath: source))
    }
}
