import BAAssetServer
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Asset packs end to end: `ba pack` publishes to a loopback server, a real basd installs them
/// by policy, updates them with chunk deltas (bytes counted from the server's log), switches
/// atomically, removes obsolete ones, and refuses what it must.
@Suite("asset packs on the device", .timeLimit(.minutes(5)))
struct AssetPackTests {
    let ba = BuildProducts.executable("ba")

    static func contents(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map(Array.init)
    }

    /// Whether the file at `path` holds `bytes` (a Bool, so a failure does not print megabytes).
    static func same(_ path: String, _ bytes: [UInt8]?) -> Bool { contents(path) == bytes }

    @Test("install by policy, on-demand ensure, a delta update that fetches only what changed, obsolete removal")
    func policiesDeltaAndObsolete() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let baseA = PackFixture.random(1 << 20, seed: 1)
        let baseB = PackFixture.random(300_000, seed: 2)
        var big = PackFixture.random(6 << 20, seed: 3)
        var level = PackFixture.random(400_000, seed: 4)
        let extra = PackFixture.random(200_000, seed: 5)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": baseA, "sub/b.bin": baseB])
        try fixture.write(pack: "levels", policy: PackFixture.prefetch, files: ["big.bin": big, "l1.bin": level])
        try fixture.write(pack: "extras", policy: PackFixture.onDemand, files: ["x.bin": extra])
        try await fixture.publish(["base", "levels", "extras"], version: 1)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        #expect(install.stdout.contains("essential packs local: base"), "\(install.stdout)")
        // The essential pack is whole when ba returns, read through the container's link.
        let base = PackFixture.packPath(daemon, "base")
        #expect(Self.same(base + "/base/a.bin", baseA))
        #expect(Self.same(base + "/base/sub/b.bin", baseB))
        // Read-only for the app.
        #expect(access(base + "/base/a.bin", W_OK) != 0 || getuid() == 0)
        var info = stat()
        #expect(stat(base + "/base/a.bin", &info) == 0 && info.st_mode & 0o222 == 0)

        // The prefetch pack arrives in the background; the on-demand one waits.
        let later = try await fixture.waitForPacks(daemon, "levels to be local") {
            $0["levels"]?["localVersion"] as? Int == 1
        }
        #expect(later["extras"]?["localVersion"] == nil, "\(later)")
        #expect((later["extras"]?["status"] as? String)?.contains("downloadAvailable") == true, "\(later)")
        #expect(Self.same(PackFixture.packPath(daemon, "levels") + "/levels/big.bin", big))
        #expect(fixture.server.requests(for: "/packs/extras/1.json").isEmpty)

        let ensure = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "extras", "--socket", daemon.socketPath])
        #expect(ensure.status == 0, "\(ensure.stdout)\(ensure.stderr)")
        #expect(Self.same(PackFixture.packPath(daemon, "extras") + "/extras/x.bin", extra))

        // Version 2 of levels: one byte inserted in the middle of the 6 MiB file, the small file rewritten.
        big.insert(0x42, at: big.count / 2)
        level = PackFixture.random(400_000, seed: 40)
        try fixture.write(pack: "levels", policy: PackFixture.prefetch, files: ["big.bin": big, "l1.bin": level])
        try await fixture.publish(["levels"], version: 2)
        let before = fixture.server.requests.count
        let check = try await runProcess(ba, ["packs", "check", PackFixture.app, "--socket", daemon.socketPath])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        _ = try await fixture.waitForPacks(daemon, "levels 2") { $0["levels"]?["localVersion"] as? Int == 2 }
        #expect(Self.same(PackFixture.packPath(daemon, "levels") + "/levels/big.bin", big))
        #expect(Self.same(PackFixture.packPath(daemon, "levels") + "/levels/l1.bin", level))
        // What was fetched: the rewritten file's chunks and the chunk or two around the insertion,
        // never the 6 MiB file again (random bytes do not compress, so stored ≈ raw).
        let fetched = fixture.chunkBytes(from: before)
        #expect(fetched.bytes <= level.count + 3 * 256 * 1024, "fetched \(fetched)")
        #expect(fetched.bytes >= level.count, "fetched \(fetched)")
        #expect(fetched.requests <= 12, "fetched \(fetched)")
        // The old version goes once nothing holds it.
        let versions = daemon.stateDirectory + "/packs/\(PackFixture.app)/.background-assets/packs/levels"
        _ = try await CLIQueries.poll(
            "version 1 of levels to go", daemon, timeout: 30,
            read: { (try? FileManager.default.contentsOfDirectory(atPath: versions)) ?? [] },
            until: { !$0.contains("1") })

        // extras is no longer published: obsolete, removed.
        try FileManager.default.removeItem(atPath: fixture.publish + "/packs/extras")
        try await fixture.publish([], version: 0)
        let again = try await runProcess(ba, ["packs", "check", PackFixture.app, "--socket", daemon.socketPath])
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        let final = try await fixture.waitForPacks(daemon, "extras to go") { $0["extras"] == nil }
        #expect(final["levels"]?["localVersion"] as? Int == 2)
        var link = stat()
        #expect(lstat(PackFixture.packPath(daemon, "extras"), &link) != 0)
    }

    @Test("a corrupt chunk on the CDN fails the update clearly and the local version stays")
    func corruptChunk() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let v1 = PackFixture.random(500_000, seed: 7)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": v1])
        try await fixture.publish(["base"], version: 1)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")

        let v2 = PackFixture.random(500_000, seed: 8)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": v2])
        try await fixture.publish(["base"], version: 2)
        // Every chunk v2 added has one byte changed in the middle: the same length, other bytes.
        let old = try fixture.chunkNames(pack: "base", version: 1)
        let added = try fixture.chunkNames(pack: "base", version: 2).subtracting(old)
        #expect(!added.isEmpty)
        for name in added {
            let path = fixture.publish + "/chunks/" + name.prefix(2) + "/" + name
            var bytes = try #require(Self.contents(path))
            bytes[bytes.count / 2] ^= 0xFF
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }
        // And the bundles that hold them.
        for name in try FileManager.default.contentsOfDirectory(atPath: fixture.publish + "/packs/base")
        where name.hasPrefix("2-") {
            let path = fixture.publish + "/packs/base/" + name
            var bytes = try #require(Self.contents(path))
            bytes[bytes.count / 2] ^= 0xFF
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }

        let update = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "base", "--latest", "--socket", daemon.socketPath])
        #expect(update.status == 20, "\(update.stdout)\(update.stderr)")
        #expect(update.stderr.contains("bad chunk"), "\(update.stderr)")
        let packs = try await fixture.packs(daemon)
        #expect(packs["base"]?["localVersion"] as? Int == 1, "\(packs)")
        #expect((packs["base"]?["error"] as? String)?.contains("the local one stays") == true, "\(packs)")
        #expect(Self.same(PackFixture.packPath(daemon, "base") + "/base/a.bin", v1))
    }

    @Test("BAAssetPackPublicKey: a signed manifest installs; unsigned or signed with another key is refused")
    func signatures() async throws {
        let keys = try TemporaryDirectory()
        defer { keys.remove() }
        let generate = try await runProcess(ba, ["pack", "keygen", "-o", keys.path + "/good.key"])
        #expect(generate.status == 0, "\(generate.stderr)")
        let other = try await runProcess(ba, ["pack", "keygen", "-o", keys.path + "/other.key"])
        #expect(other.status == 0, "\(other.stderr)")
        let publicKey = try String(contentsOfFile: keys.path + "/good.key.pub", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)

        let fixture = try await PackFixture.make(publicKey: publicKey)
        defer { fixture.remove() }
        let bytes = PackFixture.random(100_000, seed: 9)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": bytes])
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        // Unsigned.
        try await fixture.publish(["base"], version: 1)
        let unsigned = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(unsigned.status == 20, "\(unsigned.stdout)\(unsigned.stderr)")
        #expect(unsigned.stderr.contains("not signed"), "\(unsigned.stderr)")
        // Signed with another key.
        try await fixture.publish([], version: 0, key: keys.path + "/other.key")
        let wrong = try await runProcess(ba, ["update", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(wrong.status == 20, "\(wrong.stdout)\(wrong.stderr)")
        #expect(wrong.stderr.contains("signature does not match"), "\(wrong.stderr)")
        #expect(FileManager.default.contents(atPath: PackFixture.packPath(daemon, "base") + "/base/a.bin") == nil)
        // Signed with the app's key.
        try await fixture.publish([], version: 0, key: keys.path + "/good.key")
        let good = try await runProcess(ba, ["update", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(good.status == 0, "\(good.stdout)\(good.stderr)")
        #expect(Self.same(PackFixture.packPath(daemon, "base") + "/base/a.bin", bytes))
    }

    @Test(
        "kill -9 of basd mid-update: a reader never sees a mixed version, and the update resumes from what was verified"
    )
    func killMidUpdate() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let names = (0..<8).map { "f\($0).bin" }
        func version(_ marker: UInt8, seed: UInt64) -> [String: [UInt8]] {
            Dictionary(
                uniqueKeysWithValues: names.enumerated().map { index, name in
                    (name, [marker] + PackFixture.random(1 << 20, seed: seed + UInt64(index)))
                })
        }
        let v1 = version(1, seed: 100)
        try fixture.write(pack: "levels", policy: PackFixture.essential, files: v1)
        try await fixture.publish(["levels"], version: 1, bundleSize: 1 << 20)
        let daemon = try await DaemonProcess.start()
        var running = daemon
        defer { running.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")

        let v2 = version(2, seed: 200)
        try fixture.write(pack: "levels", policy: PackFixture.essential, files: v2)
        try await fixture.publish(["levels"], version: 2, bundleSize: 1 << 20)
        // Eight bundles of 1 MiB, fetched four at a time. Three of them hang (fewer than the four
        // fetched at once, so the other five all arrive): the update stops part-way and stays there
        // for as long as the test needs, however loaded the machine. (A trickle made the window a
        // few seconds long, and a poll under load missed it: the update had finished.)
        let v2Names = try FileManager.default.contentsOfDirectory(atPath: fixture.publish + "/packs/levels")
            .filter { $0.hasPrefix("2-") && $0.hasSuffix(".bundle") }.sorted()
        let v2Bundles = v2Names.count
        #expect(v2Bundles == 8, "\(v2Names)")
        let hanging = v2Names.prefix(3).map { "/packs/levels/" + $0 }
        for path in hanging { fixture.server.setBehavior(.stall(afterBytes: 0), for: path) }
        let reader = VersionReader(directory: PackFixture.packPath(daemon, "levels") + "/levels", names: names)
        reader.start()
        defer { reader.stop() }
        let before = fixture.server.requests.count
        let check = try await runProcess(ba, ["packs", "check", PackFixture.app, "--socket", daemon.socketPath])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        let arriving = try v2Names.dropFirst(3).reduce(0) { total, name in
            total
                + ((try FileManager.default.attributesOfItem(atPath: fixture.publish + "/packs/levels/" + name)[.size]
                    as? Int) ?? 0)
        }
        _ = try await fixture.waitForPacks(daemon, "the five bundles that do not hang to be verified") {
            ($0["levels"]?["bytesFetched"] as? Int ?? 0) >= arriving
        }
        daemon.send(SIGKILL)
        #expect(daemon.waitForExit(timeout: 20) != nil)
        let firstRun = fixture.server.requests.dropFirst(before).filter { $0.path.hasSuffix(".bundle") }.count
        for path in hanging { fixture.server.setBehavior(nil, for: path) }
        let afterKill = fixture.server.requests.count
        running = try await daemon.restarted()
        _ = try await fixture.waitForPacks(running, "version 2 after the restart") {
            $0["levels"]?["localVersion"] as? Int == 2
        }
        let rounds = reader.stop()
        #expect(rounds.mixed == 0, "\(rounds)")
        #expect(rounds.failed == 0, "\(rounds)")
        #expect(rounds.rounds > 0 && rounds.sawSecond, "\(rounds)")
        for name in names {
            #expect(Self.same(PackFixture.packPath(running, "levels") + "/levels/" + name, v2[name]))
        }
        // What was verified before the kill was kept: the second run fetched fewer bundles than v2 has.
        let secondRun = fixture.server.requests.dropFirst(afterKill).filter { $0.path.hasSuffix(".bundle") }.count
        #expect(secondRun < v2Bundles, "first run \(firstRun), second \(secondRun), v2 has \(v2Bundles)")
        // The kill came mid-update: the second basd had bundles left to fetch.
        #expect(secondRun > 0, "first run \(firstRun), second \(secondRun), v2 has \(v2Bundles)")
        #expect(await running.logged("resuming version 2"), "\(running.standardError)")
    }

    @Test("two packs that share a file: its chunks are stored once, and both packs install whole")
    func sharedChunks() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let shared = PackFixture.random(700_000, seed: 11)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["shared.bin": shared])
        try fixture.write(
            pack: "extras", policy: PackFixture.onDemand,
            files: ["shared.bin": shared, "own.bin": PackFixture.random(100_000, seed: 12)])
        try await fixture.publish(["base", "extras"], version: 1)
        // The second pack's build added only its own file's chunks.
        let base = try fixture.chunkNames(pack: "base", version: 1)
        let extras = try fixture.chunkNames(pack: "extras", version: 1)
        #expect(base.isSubset(of: extras))
        let stored = try FileManager.default.subpathsOfDirectory(atPath: fixture.publish + "/chunks").filter {
            $0.count > 3
        }
        #expect(stored.count == extras.count, "\(stored.count) stored, \(extras.count) distinct")
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        // A CLI observer (what `ba events --follow` is) hears the pack's events.
        let events = PackEventInbox()
        let observer = try DaemonClient(
            socketPath: daemon.socketPath, client: ClientInfo(role: .cli, pid: getpid()),
            onPackEvent: { events.append($0) })
        defer { observer.close() }
        _ = try observer.call(.subscribeEvents)
        let before = fixture.server.requests.count
        let ensure = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "extras", "--socket", daemon.socketPath])
        #expect(ensure.status == 0, "\(ensure.stdout)\(ensure.stderr)")
        #expect(Self.same(PackFixture.packPath(daemon, "base") + "/base/shared.bin", shared))
        #expect(Self.same(PackFixture.packPath(daemon, "extras") + "/extras/shared.bin", shared))
        // The shared file's chunks came from the local base pack: only own.bin's were fetched.
        let fetched = fixture.chunkBytes(from: before)
        #expect(fetched.bytes <= 100_000 + 256 * 1024 && fetched.bytes >= 100_000, "\(fetched)")
        #expect(!fixture.server.requests.dropFirst(before).contains { $0.path.hasSuffix(".bundle") })
        let heard = try await CLIQueries.poll(
            "the pack's finished event", daemon, timeout: 30, read: { events.all.map(\.kind.name) },
            until: { $0.contains("finished") })
        #expect(heard.first == "began", "\(heard)")
        #expect(events.all.allSatisfy { $0.assetPackID == "extras" && $0.appIdentifier == PackFixture.app })

        // ba uninstall takes the packs with it.
        let uninstall = try await runProcess(ba, ["uninstall", PackFixture.app, "--socket", daemon.socketPath])
        #expect(uninstall.status == 0, "\(uninstall.stdout)\(uninstall.stderr)")
        let root = daemon.stateDirectory + "/packs/" + PackFixture.app
        _ = try await CLIQueries.poll(
            "the app's packs to go", daemon, timeout: 30, read: { FileManager.default.fileExists(atPath: root) },
            until: { !$0 })
    }

    @Test("ba packs verify finds a damaged file; --repair fetches only its bad chunk and swaps the version in whole")
    func verifyAndRepair() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let big = PackFixture.random(3 << 20, seed: 31)
        let small = PackFixture.random(200_000, seed: 32)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["big.bin": big, "small.bin": small])
        try await fixture.publish(["base"], version: 1)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        let clean = try await runProcess(ba, ["packs", "verify", PackFixture.app, "--socket", daemon.socketPath])
        #expect(clean.status == 0, "\(clean.stdout)\(clean.stderr)")
        #expect(clean.stdout.contains("every file matches its index"), "\(clean.stdout)")

        // A byte of the big file changes on disk (the app made it writable again).
        let path = PackFixture.packPath(daemon, "base") + "/base/big.bin"
        #expect(chmod(path, 0o644) == 0)
        let fd = open(path, O_WRONLY)
        var byte: UInt8 = 0x5A
        #expect(pwrite(fd, &byte, 1, 1_500_000) == 1)
        close(fd)
        // A reader holds the damaged file open through the repair.
        let held = open(path, O_RDONLY)
        let found = try await runProcess(ba, ["packs", "verify", PackFixture.app, "--socket", daemon.socketPath])
        #expect(found.status == 43, "\(found.stdout)\(found.stderr)")
        #expect(found.stdout.contains("base 1: base/big.bin"), "\(found.stdout)")

        let before = fixture.server.requests.count
        let repair = try await runProcess(
            ba, ["packs", "verify", PackFixture.app, "--repair", "--socket", daemon.socketPath])
        #expect(repair.status == 0, "\(repair.stdout)\(repair.stderr)")
        _ = try await fixture.waitForPacks(daemon, "the repair to end") {
            ($0["base"]?["status"] as? String)?.contains("downloading") == false
        }
        #expect(Self.same(path, big))
        #expect(Self.same(PackFixture.packPath(daemon, "base") + "/base/small.bin", small))
        let again = try await runProcess(ba, ["packs", "verify", PackFixture.app, "--socket", daemon.socketPath])
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)\n\(daemon.standardError)")
        // Only the damaged chunk was fetched, not a bundle.
        let fetched = fixture.chunkBytes(from: before)
        #expect(fetched.requests >= 1 && fetched.requests <= 2, "\(fetched)")
        #expect(!fixture.server.requests.dropFirst(before).contains { $0.path.hasSuffix(".bundle") })
        // The reader still reads the damaged copy it opened; the copy stays while it is open and
        // goes once it is closed (basd looks again every 10 s).
        var first: UInt8 = 0
        #expect(pread(held, &first, 1, 1_500_000) == 1 && first == 0x5A)
        let replaced = daemon.stateDirectory + "/packs/\(PackFixture.app)/.background-assets/packs/base/1.replaced"
        #expect(FileManager.default.fileExists(atPath: replaced))
        close(held)
        _ = try await CLIQueries.poll(
            "the damaged copy to go", daemon, timeout: 40, read: { FileManager.default.fileExists(atPath: replaced) },
            until: { !$0 })
    }

    @Test(
        "a lying CDN: an index other than the manifest's is refused, and so is a signed-off index whose paths leave the pack"
    )
    func lyingIndexes() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        try fixture.write(
            pack: "base", policy: PackFixture.essential, files: ["a.bin": PackFixture.random(50_000, seed: 51)])
        try await fixture.publish(["base"], version: 1, indexFormat: 1)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        // The CDN serves an index that is not the one the manifest names.
        let indexPath = fixture.publish + "/packs/base/1.json"
        let original = try Data(contentsOf: URL(fileURLWithPath: indexPath))
        try (original + Data(" ".utf8)).write(to: URL(fileURLWithPath: indexPath))
        let swapped = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(swapped.status == 20, "\(swapped.stdout)\(swapped.stderr)")
        #expect(
            swapped.stderr.contains("not the") && swapped.stderr.contains("the manifest gives"), "\(swapped.stderr)")

        // A publisher's index (its SHA-256 in the manifest) whose file path climbs out of the pack.
        let hostile = String(decoding: original, as: UTF8.self).replacingOccurrences(
            of: "\"base/a.bin\"", with: "\"../../../escaped.bin\"")
        #expect(hostile.contains("escaped.bin"))
        try Data(hostile.utf8).write(to: URL(fileURLWithPath: indexPath))
        try await fixture.publish([], version: 0)
        let climbing = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "base", "--latest", "--socket", daemon.socketPath])
        #expect(climbing.status == 20, "\(climbing.stdout)\(climbing.stderr)")
        // Refused when the index is read, before any plan or file.
        #expect(
            climbing.stderr.contains("is refused") && climbing.stderr.contains("a path must be relative"),
            "\(climbing.stderr)")
        let escaped = try FileManager.default.subpathsOfDirectory(atPath: daemon.stateDirectory).filter {
            $0.hasSuffix("escaped.bin")
        }
        #expect(escaped.isEmpty, "\(escaped)")
        #expect(!FileManager.default.fileExists(atPath: daemon.stateDirectory + "/escaped.bin"))
    }

    @Test("ba packs, ba packs ensure and ba packs check about an app basd does not know each say so (exit 33)")
    func unknownApp() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        for arguments in [
            ["packs", "--app", "com.example.nobody"], ["packs", "ensure", "com.example.nobody", "base"],
            ["packs", "check", "com.example.nobody"],
        ] {
            let run = try await runProcess(ba, arguments + ["--socket", daemon.socketPath])
            #expect(run.status == 33, "\(arguments): \(run.stdout)\(run.stderr)")
            #expect(run.stderr.contains("com.example.nobody is not registered with basd"), "\(run.stderr)")
        }
    }
}

/// Reads a pack's files a round at a time through one directory descriptor opened on the link
/// (as an app that resolves the pack once per read would), on its own thread: every file of a
/// round must carry the same version byte.
final class VersionReader: @unchecked Sendable {
    struct Rounds: Sendable, CustomStringConvertible {
        var rounds = 0
        var mixed = 0
        var failed = 0
        var sawSecond = false
        var description: String { "\(rounds) rounds, \(mixed) mixed, \(failed) failed, saw v2: \(sawSecond)" }
    }

    let directory: String
    let names: [String]
    private let lock = NSLock()
    private var stopped = false
    private var result = Rounds()
    private let done = DispatchSemaphore(value: 0)
    private var thread: Thread?

    init(directory: String, names: [String]) {
        self.directory = directory
        self.names = names
    }

    func start() {
        let thread = Thread { [self] in
            // Bounded: 20 minutes of rounds at most, far beyond the test's limit.
            for _ in 0..<2_000_000 {
                if lock.withLock({ stopped }) { break }
                round()
            }
            done.signal()
        }
        self.thread = thread
        thread.start()
    }

    private func round() {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            lock.withLock { result.failed += 1 }
            return
        }
        defer { close(fd) }
        var markers: Set<UInt8> = []
        for name in names {
            let file = openat(fd, name, O_RDONLY | O_CLOEXEC)
            guard file >= 0 else {
                lock.withLock { result.failed += 1 }
                return
            }
            var byte: UInt8 = 0
            let count = read(file, &byte, 1)
            close(file)
            guard count == 1 else {
                lock.withLock { result.failed += 1 }
                return
            }
            markers.insert(byte)
        }
        lock.withLock {
            result.rounds += 1
            if markers.count > 1 { result.mixed += 1 }
            if markers == [2] { result.sawSecond = true }
        }
    }

    @discardableResult
    func stop() -> Rounds {
        let wasRunning = lock.withLock {
            defer { stopped = true }
            return !stopped && thread != nil
        }
        if wasRunning { done.wait() }
        return lock.withLock { result }
    }
}

/// Pack events a CLI observer received, from the client's reader thread.
final class PackEventInbox: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [PackEvent] = []
    func append(_ event: PackEvent) { lock.withLock { events.append(event) } }
    var all: [PackEvent] { lock.withLock { events } }
}
