import BAAssetServer
import BACore
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A state folder on a small tmpfs that the test fills: the mount needs root (or a mount
/// namespace), so the suite is skipped, saying why, where `mount -t tmpfs` is not permitted.
enum SmallFileSystem {
    /// Mounts a tmpfs of `megabytes` on `path` (mode 0700).
    static func mount(at path: String, megabytes: Int) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let output = try runProcessBlocking(
            "/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0700", "tmpfs", path], environment: [:],
            currentDirectory: nil)
        guard output.status == 0 else { throw HarnessError("mount -t tmpfs: \(output.stderr)") }
    }

    static func unmount(_ path: String) {
        _ = try? runProcessBlocking("/bin/umount", ["-l", path], environment: [:], currentDirectory: nil)
    }

    /// Whether this process may mount a tmpfs (tried once on a scratch folder).
    static let available: Bool = {
        guard let scratch = try? TemporaryDirectory() else { return false }
        defer { scratch.remove() }
        let point = scratch.path + "/probe"
        guard (try? mount(at: point, megabytes: 1)) != nil else { return false }
        unmount(point)
        return true
    }()

    /// Fills the file system holding `path` with a file there, until it is full or `leaving`
    /// bytes are left.
    static func fill(_ path: String, leaving: Int64 = 0) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw HarnessError("open \(path): errno \(errno)") }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0xA5, count: 64 * 1024)
        while freeBytes(path) > leaving {
            let want = Int(min(Int64(chunk.count), freeBytes(path) - leaving))
            guard want > 0, chunk.withUnsafeBytes({ write(fd, $0.baseAddress, want) }) > 0 else { break }
        }
    }

    /// Free bytes of the file system holding `path`.
    static func freeBytes(_ path: String) -> Int64 {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return 0 }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }
}

@Suite(
    "basd on a full disk", .timeLimit(.minutes(2)),
    .enabled(if: SmallFileSystem.available, "needs `mount -t tmpfs` (root); skipped where it is not permitted"))
struct DiskFullTests {
    /// The state folder fills up while a download runs: the transfer waits for space, visibly,
    /// and finishes by itself once space is freed; the app hears `finished`, never `failed`.
    @Test("a download that hits ENOSPC waits for space, shown by ba downloads, and resumes by itself")
    func waitsForSpace() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let contents = SampleAppFixture.bytes(512 * 1024, seed: 9)
        server.setFile("/big.bin", contents: contents)
        // Slow enough that the disk fills while it runs (32 s in all: a loaded machine may take
        // seconds between two steps of the test); the resume after the fill is served at full speed.
        server.setBehavior(.trickle(bytesPerSecond: 16 * 1024), for: "/big.bin")
        let directory = try TemporaryDirectory()
        let state = directory.path + "/state"
        try SmallFileSystem.mount(at: state, megabytes: 8)
        defer { SmallFileSystem.unmount(state) }
        let daemon = try await DaemonProcess.start(directory: directory)
        defer { daemon.kill() }
        try DownloadServiceTests.register(daemon)
        let inbox = EventInbox()
        let app = try DownloadServiceTests.appClient(daemon, inbox: inbox)
        defer { app.close() }
        try app.call(.subscribeEvents)
        try app.call(.schedule(DownloadDescription(identifier: "big", url: server.url("/big.bin"))))
        // Some bytes on disk first, so there is something to resume.
        try await inbox.wait(timeout: 30, "the first 64 KiB") {
            $0.contains { $0.kind == .progress && ($0.bytesWritten ?? 0) >= 64 * 1024 }
        }

        // The disk fills up under the running transfer (and under basd's own store).
        let filler = state + "/filler"
        try SmallFileSystem.fill(filler)
        let rows = try await CLIQueries.pollDownloads(
            "the download waiting for space", daemon, app: DownloadServiceTests.app, timeout: 30,
            until: { $0.first?["waitingFor"] as? String == "space" })
        #expect(rows.first?["state"] as? String != "failed")
        #expect(await daemon.logged("waits for disk space"), "\(daemon.standardError)")
        #expect(!inbox.all.contains { $0.kind == .failed }, "\(inbox.all)")

        // Space comes back: the transfer resumes by itself and the app hears it finished.
        server.setBehavior(nil, for: "/big.bin")
        try FileManager.default.removeItem(atPath: filler)
        let events = try await inbox.wait(timeout: 30, "finished after space was freed") {
            $0.contains { $0.kind == .finished }
        }
        let finished = try #require(events.first { $0.kind == .finished })
        let path = try #require(finished.destination)
        #expect(FileManager.default.contents(atPath: path) == Data(contents))
        #expect(!events.contains { $0.kind == .failed })
        // Resumed from its byte, not fetched again from 0.
        let ranges = server.requests(for: "/big.bin").compactMap { $0.header("Range") }
        #expect(!ranges.isEmpty, "\(server.requests(for: "/big.bin"))\n\(daemon.standardError)")
    }

    /// The disk fills up while a pack version is fetched and assembled: the pack waits for
    /// space, visibly, never fails, and completes by itself once space is freed; the local
    /// version stays readable throughout.
    @Test("a pack update that hits a full disk waits for space, shown by ba packs, and completes by itself")
    func packWaitsForSpace() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let v1 = PackFixture.random(2 << 20, seed: 21)
        try fixture.write(pack: "levels", policy: PackFixture.essential, files: ["a.bin": v1])
        try await fixture.publish(["levels"], version: 1, bundleSize: 1 << 20)
        let directory = try TemporaryDirectory()
        let state = directory.path + "/state"
        try SmallFileSystem.mount(at: state, megabytes: 40)
        defer { SmallFileSystem.unmount(state) }
        let daemon = try await DaemonProcess.start(directory: directory)
        defer { daemon.kill() }
        let ba = BuildProducts.executable("ba")
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")

        let v2 = PackFixture.random(8 << 20, seed: 22)
        try fixture.write(pack: "levels", policy: PackFixture.essential, files: ["a.bin": v2])
        try await fixture.publish(["levels"], version: 2, bundleSize: 1 << 20)
        fixture.server.setDefaultBehavior(.trickle(bytesPerSecond: 256 * 1024))
        let check = try await runProcess(ba, ["packs", "check", PackFixture.app, "--socket", daemon.socketPath])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        _ = try await fixture.waitForPacks(daemon, "a part of version 2") {
            ($0["levels"]?["bytesFetched"] as? Int ?? 0) >= 1 << 20
        }
        let filler = state + "/filler"
        try SmallFileSystem.fill(filler)
        let waiting = try await fixture.waitForPacks(daemon, "the pack waiting for space") {
            $0["levels"]?["waitingFor"] as? String == "space"
        }
        #expect(waiting["levels"]?["error"] == nil, "\(waiting)")
        #expect(waiting["levels"]?["localVersion"] as? Int == 1, "\(waiting)")
        #expect(AssetPackTests.same(PackFixture.packPath(daemon, "levels") + "/levels/a.bin", v1))

        fixture.server.setDefaultBehavior(nil)
        try FileManager.default.removeItem(atPath: filler)
        let done = try await fixture.waitForPacks(daemon, "version 2 after space came back") {
            $0["levels"]?["localVersion"] as? Int == 2
        }
        #expect(done["levels"]?["error"] == nil, "\(done)")
        #expect(AssetPackTests.same(PackFixture.packPath(daemon, "levels") + "/levels/a.bin", v2))
    }
}
