import BAPacks
import BAStore
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 33's hostile CDN, each attack against a real basd and a loopback server with indexes and
/// manifests re-signed with the app's real key (only the content lies): basd stays up and answers
/// `ba status` throughout, the lying pack fails with its reason and code, the app's other packs
/// install, and a restart does not bring the failure back; an old, expired, misdirected or
/// unsigned manifest is refused with its own code and changes nothing; a job in flight at three
/// `kill -9`s in a row is parked, and `ba packs ensure` tries again.
@Suite("asset packs against a hostile CDN", .timeLimit(.minutes(5)))
struct PackTrustTests {
    let ba = BuildProducts.executable("ba")

    /// A key pair in `directory`: (private key path, public key base64).
    func keyPair(in directory: String) async throws -> (String, String) {
        let path = directory + "/signing.key"
        let generate = try await runProcess(ba, ["pack", "keygen", "-o", path])
        #expect(generate.status == 0, "\(generate.stderr)")
        let publicKey = try String(contentsOfFile: path + ".pub", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return (path, publicKey)
    }

    func status(_ daemon: DaemonProcess) async throws -> Bool {
        try await runProcess(ba, ["status", "--socket", daemon.socketPath]).status == 0
    }

    /// An app whose manifest must be signed, with one essential pack `base` (version 1, signed),
    /// installed on a real basd: `body` gets the fixture, the private key's path and basd.
    func withSignedApp(_ body: (PackFixture, String, DaemonProcess) async throws -> Void) async throws {
        let keys = try TemporaryDirectory()
        defer { keys.remove() }
        let (key, publicKey) = try await keyPair(in: keys.path)
        let fixture = try await PackFixture.make(publicKey: publicKey)
        defer { fixture.remove() }
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": [1]])
        try await fixture.publish(["base"], version: 1, key: key)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        try await body(fixture, key, daemon)
    }

    /// Rewrites the app's `Info.plist` with `change` (an update the package manager installed).
    static func updateInfo(of fixture: PackFixture, _ change: (inout [String: Any]) -> Void) throws {
        let plist = fixture.appDirectory + "/Info.plist"
        var info = try #require(
            try PropertyListSerialization.propertyList(from: Data(contentsOf: URL(fileURLWithPath: plist)), format: nil)
                as? [String: Any])
        change(&info)
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: plist))
    }

    /// Rewrites a published index with `change` (its JSON object), as a hostile CDN would serve it.
    static func tamper(_ fixture: PackFixture, pack: String, _ change: (inout [String: Any]) -> Void) throws {
        let path = fixture.publish + "/packs/\(pack)/1.json"
        var index = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        change(&index)
        try JSONSerialization.data(withJSONObject: index).write(to: URL(fileURLWithPath: path))
    }

    static func firstChunk(_ index: inout [String: Any], _ change: (inout [String: Any]) -> Void) {
        guard var files = index["files"] as? [[String: Any]], var chunks = files[0]["chunks"] as? [[String: Any]]
        else { return }
        change(&chunks[0])
        files[0]["chunks"] = chunks
        index["files"] = files
    }

    @Test(
        "lying indexes (a 1 TiB chunk, two of 2^62 bytes, a bundle of -1 chunks) fail their pack; basd and the others go on"
    )
    func lyingIndexes() async throws {
        let keys = try TemporaryDirectory()
        defer { keys.remove() }
        let (key, publicKey) = try await keyPair(in: keys.path)
        let fixture = try await PackFixture.make(publicKey: publicKey)
        defer { fixture.remove() }
        let base = PackFixture.random(200_000, seed: 331)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": base])
        for lie in ["huge", "overflow", "negative"] {
            try fixture.write(
                pack: lie, policy: PackFixture.prefetch,
                files: [
                    "a.bin": PackFixture.random(100_000, seed: 332), "b.bin": PackFixture.random(50_000, seed: 333),
                ])
        }
        // Format 1: the lies are in one JSON document (format 2's parts: PackIndexTreeTests, the fuzzer).
        try await fixture.publish(["base", "huge", "overflow", "negative"], version: 1, key: key, indexFormat: 1)
        try Self.tamper(fixture, pack: "huge") { index in
            Self.firstChunk(&index) { $0["length"] = 1 << 40 }
            var files = index["files"] as? [[String: Any]] ?? []
            files[0]["size"] = 1 << 40
            index["files"] = files
        }
        try Self.tamper(fixture, pack: "overflow") { index in
            guard var files = index["files"] as? [[String: Any]] else { return }
            let chunk = (files[0]["chunks"] as? [[String: Any]] ?? [])[0]
            var first = chunk
            var second = chunk
            first["length"] = 1 << 62
            second["length"] = 1 << 62
            second["sha256"] = String(repeating: "e", count: 64)
            files[0]["chunks"] = [first, second]
            files[0]["size"] = Int.max
            index["files"] = files
        }
        try Self.tamper(fixture, pack: "negative") { index in
            guard var bundles = index["bundles"] as? [[String: Any]] else { return }
            bundles[0]["chunks"] = -1
            index["bundles"] = bundles
        }
        // Published again over the lying indexes: their SHA-256s in a validly signed manifest.
        try await fixture.publish([], version: 0, key: key)

        let daemon = try await DaemonProcess.start()
        var running = daemon
        defer { running.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        #expect(AssetPackTests.same(PackFixture.packPath(daemon, "base") + "/base/a.bin", base))
        let failed = try await fixture.waitForPacks(daemon, "the three lies to fail") { packs in
            ["huge", "overflow", "negative"].allSatisfy { packs[$0]?["errorCode"] as? Int == 1102 }
        }
        #expect((failed["huge"]?["error"] as? String)?.contains("is refused") == true, "\(failed)")
        #expect((failed["negative"]?["error"] as? String)?.contains("holds -1 chunks") == true, "\(failed)")
        for lie in ["huge", "overflow", "negative"] { #expect(failed[lie]?["localVersion"] == nil, "\(failed)") }
        #expect(try await status(daemon))
        #expect(daemon.waitForExit(timeout: 0.1) == nil, "\(daemon.standardError)")

        // A restart does not bring the failure back as a crash: basd serves, the lies stay failed.
        running = try await daemon.restarted()
        #expect(try await status(running))
        let after = try await fixture.packs(running)
        #expect(after["base"]?["localVersion"] as? Int == 1, "\(after)")
        for lie in ["huge", "overflow", "negative"] { #expect(after[lie]?["errorCode"] as? Int == 1102, "\(after)") }
        #expect(running.waitForExit(timeout: 0.1) == nil, "\(running.standardError)")
    }

    @Test("old, expired, misdirected and unsigned manifests are refused, each with its code, and change nothing")
    func replayedManifests() async throws {
        let keys = try TemporaryDirectory()
        defer { keys.remove() }
        let (key, publicKey) = try await keyPair(in: keys.path)
        let fixture = try await PackFixture.make(publicKey: publicKey)
        defer { fixture.remove() }
        let v1 = PackFixture.random(100_000, seed: 341)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": v1])
        try fixture.write(pack: "extras", policy: PackFixture.essential, files: ["x.bin": [1, 2, 3]])
        try await fixture.publish(["base", "extras"], version: 1, key: key)
        let manifestPath = fixture.publish + "/manifest.json"
        let old = try Data(contentsOf: URL(fileURLWithPath: manifestPath))
        let oldSignature = try Data(contentsOf: URL(fileURLWithPath: manifestPath + ".sig"))
        // In Apple's shape (format 3): what is replayed below is a signed manifest of that shape.
        #expect(String(decoding: old, as: UTF8.self).contains(#""id":"base""#))
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")

        // Version 2 of base, a security fix; extras dropped. Sequence 2.
        let v2 = PackFixture.random(100_000, seed: 342)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": v2])
        try await fixture.publish(["base"], version: 2, key: key)
        let check = try await runProcess(ba, ["packs", "check", PackFixture.app, "--socket", daemon.socketPath])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        _ = try await fixture.waitForPacks(daemon, "base 2") { $0["base"]?["localVersion"] as? Int == 2 }
        let app = try TestApp(
            socketPath: daemon.socketPath, bundleIdentifier: PackFixture.app, group: PackFixture.group)
        defer { app.kill() }

        /// Serves `manifest` (and `signature`), checks, and expects a refusal with `code`.
        func refused(_ code: Int, _ says: String, manifest: Data, signature: Data?) async throws {
            try manifest.write(to: URL(fileURLWithPath: manifestPath))
            if let signature {
                try signature.write(to: URL(fileURLWithPath: manifestPath + ".sig"))
            } else {
                unlink(manifestPath + ".sig")
            }
            let check = try await runProcess(ba, ["packs", "check", PackFixture.app, "--socket", daemon.socketPath])
            #expect(check.status != 0, "\(check.stdout)")
            #expect(check.stderr.contains(says), "\(code): \(check.stderr)")
            let listed = try await runProcess(ba, ["packs", "--app", PackFixture.app, "--socket", daemon.socketPath])
            #expect(listed.stderr.contains("(error \(code))"), "\(listed.stdout)\(listed.stderr)")
            // The app's checkForUpdates gets the same code, under its localAvailabilityFailure.
            let checked = try await app.run("check")
            let error = checked["error"] as? [String: Any] ?? [:]
            #expect(error["domain"] as? String == "BAManagedErrorDomain" && error["code"] as? Int == 2, "\(checked)")
            #expect(
                error["underlyingDomain"] as? String == "org.swift-background-assets.basd"
                    && error["underlyingCode"] as? Int == code, "\(checked)")
            let packs = try await fixture.packs(daemon)
            #expect(packs["base"]?["localVersion"] as? Int == 2, "\(code): \(packs)")
            #expect(AssetPackTests.same(PackFixture.packPath(daemon, "base") + "/base/a.bin", v2))
        }
        // Rollback: v1's validly signed manifest, replayed (it also lists the dropped pack).
        try await refused(1106, "rollback", manifest: old, signature: oldSignature)
        // Freeze: a manifest that expired a minute ago (sequence 3, signed).
        let pair = try PackSigning.key(base64: String(contentsOfFile: key, encoding: .utf8), what: "key")
        _ = try PackPublisher.publish(
            fixture.publish, baseURL: fixture.server.baseURL, signingKey: pair, apps: [PackFixture.app],
            expires: Date(timeIntervalSinceNow: -60))
        try await refused(
            1105, "expired", manifest: try Data(contentsOf: URL(fileURLWithPath: manifestPath)),
            signature: try Data(contentsOf: URL(fileURLWithPath: manifestPath + ".sig")))
        // Mix-and-match: a manifest signed for another app.
        let other = try await runProcess(
            ba,
            [
                "pack", "publish", fixture.publish, "--base-url", fixture.server.baseURL, "--key", key, "--app",
                "com.example.other",
            ])
        #expect(other.status == 0, "\(other.stderr)")
        try await refused(
            1104, "not \(PackFixture.app)", manifest: try Data(contentsOf: URL(fileURLWithPath: manifestPath)),
            signature: try Data(contentsOf: URL(fileURLWithPath: manifestPath + ".sig")))
        // Unsigned.
        try await refused(
            1100, "not signed", manifest: try Data(contentsOf: URL(fileURLWithPath: manifestPath)), signature: nil)
        // A version going down: v2's index gone from the folder, a newer manifest offers v1.
        try FileManager.default.removeItem(atPath: fixture.publish + "/packs/base/2.json")
        try await fixture.publish([], version: 0, key: key)
        try await refused(
            1108, "--downgrade base=1", manifest: try Data(contentsOf: URL(fileURLWithPath: manifestPath)),
            signature: try Data(contentsOf: URL(fileURLWithPath: manifestPath + ".sig")))
        // The publisher says so: accepted, and the pack goes back to version 1.
        let downgrade = try await runProcess(
            ba,
            [
                "pack", "publish", fixture.publish, "--base-url", fixture.server.baseURL, "--key", key, "--app",
                PackFixture.app, "--downgrade", "base=1",
            ])
        #expect(downgrade.status == 0, "\(downgrade.stderr)")
        let back = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "base", "--latest", "--socket", daemon.socketPath])
        #expect(back.status == 0, "\(back.stdout)\(back.stderr)")
        _ = try await fixture.waitForPacks(daemon, "base back at 1") { $0["base"]?["localVersion"] as? Int == 1 }
        #expect(AssetPackTests.same(PackFixture.packPath(daemon, "base") + "/base/a.bin", v1))
        #expect(try await status(daemon))
    }

    @Test("a job in flight at three kill -9s in a row is parked, basd serves everyone, and ensure tries again")
    func parkedJob() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": [7, 7, 7]])
        let extras = PackFixture.random(300_000, seed: 351)
        try fixture.write(pack: "extras", policy: PackFixture.onDemand, files: ["x.bin": extras])
        try await fixture.publish(["base", "extras"], version: 1)
        let daemon = try await DaemonProcess.start()
        var running = daemon
        defer { running.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        try await fixture.ensureStalled("extras", daemon)
        for exit in 1...3 {
            _ = try await fixture.waitForPacks(running, "extras in flight (\(exit))") {
                ($0["extras"]?["status"] as? String)?.contains("downloading") == true
            }
            _ = try await CLIQueries.poll(
                "the bundle requested (\(exit))", running, timeout: 30,
                read: { fixture.server.requests(for: "/packs/extras/1-0.bundle").count },
                until: { $0 >= exit })
            running = try await running.restarted()
        }
        // The third start parked it: basd serves, the pack says why and what to do.
        #expect(try await status(running))
        let parked = try await fixture.packs(running)
        #expect(parked["extras"]?["errorCode"] as? Int == 1110, "\(parked)")
        #expect((parked["extras"]?["error"] as? String)?.contains("ba packs ensure") == true, "\(parked)")
        #expect((parked["extras"]?["status"] as? String)?.contains("downloading") == false, "\(parked)")
        #expect(parked["base"]?["localVersion"] as? Int == 1, "\(parked)")
        #expect(fixture.server.requests(for: "/packs/extras/1-0.bundle").count == 3)
        #expect(await running.logged("parked"), "\(running.standardError)")
        // A periodic check leaves it alone; ensure tries again.
        let check = try await runProcess(ba, ["packs", "check", PackFixture.app, "--socket", running.socketPath])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(fixture.server.requests(for: "/packs/extras/1-0.bundle").count == 3)
        fixture.server.setBehavior(nil, for: "/packs/extras/1-0.bundle")
        let again = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "extras", "--socket", running.socketPath])
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        #expect(AssetPackTests.same(PackFixture.packPath(running, "extras") + "/extras/x.bin", extras))
    }

    @Test("an update that removes BAAssetPackPublicKey is logged as a warning and shown by ba apps")
    func keyRemoved() async throws {
        try await withSignedApp { fixture, _, daemon in
            try Self.updateInfo(of: fixture) { info in
                info["BAAssetPackPublicKey"] = nil
                info["CFBundleShortVersionString"] = "2.0"
            }
            let update = try await runProcess(ba, ["update", fixture.appDirectory, "--socket", daemon.socketPath])
            #expect(update.status == 0, "\(update.stdout)\(update.stderr)")
            let apps = try await runProcess(ba, ["apps", "--socket", daemon.socketPath])
            #expect(
                apps.stdout.contains("WARNING") && apps.stdout.contains("removed BAAssetPackPublicKey"),
                "\(apps.stdout)")
            _ = try await CLIQueries.poll(
                "the warning in basd's log", daemon, timeout: 10, read: { daemon.standardError },
                until: { $0.contains("warning: \(PackFixture.app)") })
        }
    }

    @Test("a stored key basd cannot use refuses the manifest (1109): never read as \"no key\"")
    func keyFailsClosed() async throws {
        try await withSignedApp { fixture, _, daemon in
            var running = daemon
            defer { running.kill() }
            // basd stopped; its record of the key damaged; an unsigned manifest served.
            daemon.stop()
            let store = try BAStore.open(path: daemon.stateDirectory + "/state.sqlite")
            var record = try #require(try store.packApps().first { $0.appIdentifier == PackFixture.app })
            record.publicKey = "not a key"
            try store.setPackApp(record)
            try store.close()
            unlink(fixture.publish + "/manifest.json.sig")
            running = try await daemon.restarted()
            let check = try await runProcess(ba, ["packs", "check", PackFixture.app, "--socket", running.socketPath])
            #expect(check.status != 0 && check.stderr.contains("not a 32-byte key"), "\(check.stdout)\(check.stderr)")
            let listed = try await runProcess(ba, ["packs", "--app", PackFixture.app, "--socket", running.socketPath])
            #expect(listed.stderr.contains("(error 1109)"), "\(listed.stderr)")
            #expect(try await status(running))
        }
    }

    @Test(
        "a leaked key's fast-forward does not lock the publisher out: an update that rotates the key starts a new sequence"
    )
    func keyRotation() async throws {
        let keys = try TemporaryDirectory()
        defer { keys.remove() }
        let (leaked, leakedPublic) = try await keyPair(in: keys.path)
        let rotated = keys.path + "/rotated.key"
        #expect(try await runProcess(ba, ["pack", "keygen", "-o", rotated]).status == 0)
        let rotatedPublic = try String(contentsOfFile: rotated + ".pub", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let fixture = try await PackFixture.make(publicKey: leakedPublic)
        defer { fixture.remove() }
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": [1, 2]])
        try await fixture.publish(["base"], version: 1, key: leaked)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        // The thief fast-forwards: a manifest signed with the leaked key, sequence 1,000,000.
        let pair = try PackSigning.key(base64: String(contentsOfFile: leaked, encoding: .utf8), what: "key")
        let manifestPath = fixture.publish + "/manifest.json"
        var forged = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: manifestPath)))
                as? [String: Any])
        forged["sequence"] = 999_999
        try JSONSerialization.data(withJSONObject: forged).write(to: URL(fileURLWithPath: manifestPath))
        _ = try PackPublisher.publish(
            fixture.publish, baseURL: fixture.server.baseURL, signingKey: pair, apps: [PackFixture.app])
        let accepted = try await runProcess(ba, ["packs", "check", PackFixture.app, "--socket", daemon.socketPath])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        // The publisher ships an update with a new key and publishes with it from sequence 1.
        try Self.updateInfo(of: fixture) { info in
            info["BAAssetPackPublicKey"] = rotatedPublic
            info["CFBundleShortVersionString"] = "2.0"
        }
        unlink(manifestPath)
        try await fixture.publish([], version: 0, key: rotated)
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: manifestPath)))
        #expect((manifest as? [String: Any])?["sequence"] as? Int == 1)
        let update = try await runProcess(ba, ["update", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(update.status == 0, "\(update.stdout)\(update.stderr)")
        _ = try await CLIQueries.poll(
            "the key change in basd's log", daemon, timeout: 10, read: { daemon.standardError },
            until: { $0.contains("changed BAAssetPackPublicKey") })
        let check = try await runProcess(ba, ["packs", "check", PackFixture.app, "--socket", daemon.socketPath])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        // The leaked key's manifest, replayed after the rotation, is refused: it is not the key's.
        try JSONSerialization.data(withJSONObject: forged).write(to: URL(fileURLWithPath: manifestPath))
        _ = try PackPublisher.publish(
            fixture.publish, baseURL: fixture.server.baseURL, signingKey: pair, apps: [PackFixture.app])
        let replayed = try await runProcess(ba, ["packs", "check", PackFixture.app, "--socket", daemon.socketPath])
        #expect(replayed.status != 0 && replayed.stderr.contains("signature does not match"), "\(replayed.stderr)")
    }
}
