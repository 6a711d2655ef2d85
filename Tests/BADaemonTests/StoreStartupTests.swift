import BAAssetServer
import BACore
import BADaemonProtocol
import BAStore
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// basd checks its store before serving it (docs/state.md, "Checked at start"): a damaged file, or
/// one that lost its state while the apps' containers are still there, is refused with a message
/// naming the file and what to do, never served as an empty or partly readable state.
@Suite("basd checks its store at start", .timeLimit(.minutes(2)))
struct StoreStartupTests {
    static let app = "com.example.startup"
    static let group = "group.com.example.startup"

    /// Registers the app and connects as it, which creates its app group container.
    static func registerWithContainer(_ daemon: DaemonProcess) throws {
        try daemon.register(app, group: group)
        let client = try daemon.appClient(app)
        client.close()
    }

    static func apps(_ daemon: DaemonProcess) throws -> [String] {
        let cli = try daemon.cliClient()
        defer { cli.close() }
        guard case .apps(let apps) = try cli.call(.listApps) else { throw HarnessError("listApps not answered") }
        return apps.map(\.bundleIdentifier)
    }

    static func size(_ path: String) -> Int64? {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : nil
    }

    @Test("a state folder copied without its -wal after a crash is refused; with the -wal it starts with its apps")
    func copiedWithoutWAL() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try Self.registerWithContainer(daemon)
        // A crash: no clean close, so no checkpoint; everything since the start is in the -wal.
        daemon.send(SIGKILL)
        #expect(daemon.waitForExit(timeout: 10) != nil)
        let wal = daemon.stateDirectory + "/state.sqlite-wal"
        #expect((Self.size(wal) ?? 0) > 0, "the -wal holds the commits")

        // What a careless `cp` or a backup tool that skips -wal files copies.
        let copy = try TemporaryDirectory()
        defer { copy.remove() }
        let state = copy.path + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: daemon.stateDirectory + "/state.sqlite", toPath: state + "/state.sqlite")
        try FileManager.default.copyItem(atPath: daemon.stateDirectory + "/groups", toPath: state + "/groups")
        let mainSize = Self.size(state + "/state.sqlite")

        let refused = try runDaemonToExit(stateDirectory: state, socketPath: copy.path + "/run/basd.sock")
        #expect(refused.status == 1)
        #expect(!refused.stdout.contains("listening"), "\(refused.stdout)")
        for words in [state + "/state.sqlite", "-wal", state + "/groups", Self.group, "ba install"] {
            #expect(refused.stderr.contains(words), "missing \(words.debugDescription) in: \(refused.stderr)")
        }
        // Refused before anything was written: the file is as it was copied, no frames were added.
        #expect(Self.size(state + "/state.sqlite") == mainSize)
        #expect((Self.size(state + "/state.sqlite-wal") ?? 0) == 0)

        // The advice works: put the -wal back and basd starts with the app.
        try? FileManager.default.removeItem(atPath: state + "/state.sqlite-wal")
        try? FileManager.default.removeItem(atPath: state + "/state.sqlite-shm")
        try FileManager.default.copyItem(atPath: wal, toPath: state + "/state.sqlite-wal")
        let restored = try await DaemonProcess.start(directory: copy)
        defer { restored.kill() }
        #expect(try Self.apps(restored) == [Self.app])
    }

    /// A clean stop left a 4 MiB `-wal` beside the store: the checkpoint at close did not run or
    /// did not truncate, so the main file alone was not the whole state.
    @Test("a clean stop (SIGTERM) checkpoints the store: no -wal left, and the state reopens")
    func cleanStopCheckpoints() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let cli = try daemon.cliClient()
        // Enough commits for a -wal of several MiB-worth of frames before the stop.
        let apps = (0..<150).map { "com.example.wal\($0)" }
        for app in apps {
            _ = try cli.call(
                .registerApp(
                    AppRegistration(
                        bundleIdentifier: app, version: "1.0", appGroupIdentifier: nil,
                        appDirectory: daemon.directory.path, extensionPath: nil)))
        }
        cli.close()
        // A download under way and a follower of events at the stop, as on a real machine.
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        server.setFile("/slow.bin", contents: [UInt8](repeating: 1, count: 4 << 20))
        server.setBehavior(.trickle(bytesPerSecond: 256 << 10), for: "/slow.bin")
        let events = try ChildProcess(
            BuildProducts.executable("ba"), ["events", "--follow", "--json", "--socket", daemon.socketPath])
        defer { events.kill() }
        try events.wait("subscribed") { $0.stderr.contains("following events") }
        try daemon.register(Self.app, group: Self.group)
        let app = try daemon.appClient(Self.app)
        _ = try app.call(.schedule(DownloadDescription(identifier: "slow", url: server.url("/slow.bin"))))
        try events.wait("the download's progress") { $0.stdout.contains(#""progress""#) }
        let wal = daemon.stateDirectory + "/state.sqlite-wal"
        #expect((Self.size(wal) ?? 0) > 0, "the -wal holds the commits while basd runs")
        daemon.send(SIGTERM)
        #expect(daemon.waitForExit(timeout: 20) == 0)
        #expect((Self.size(wal) ?? 0) == 0, "after a clean stop the -wal is absent or empty: \(daemon.standardError)")

        // The main file alone is the state: without any -wal or -shm, it opens with every app.
        try? FileManager.default.removeItem(atPath: wal)
        try? FileManager.default.removeItem(atPath: daemon.stateDirectory + "/state.sqlite-shm")
        let again = try await DaemonProcess.start(directory: daemon.directory)
        defer { again.kill() }
        #expect(try Set(Self.apps(again)) == Set(apps + [Self.app]))
    }

    @Test("an empty store without containers starts: a first start, an empty groups folder")
    func emptyWithoutContainersStarts() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        #expect(try Self.apps(daemon).isEmpty)
        daemon.send(SIGTERM)
        #expect(daemon.waitForExit(timeout: 20) == 0)
        // An empty groups/ folder is not a container.
        try FileManager.default.createDirectory(
            atPath: daemon.stateDirectory + "/groups", withIntermediateDirectories: true)
        let again = try await DaemonProcess.start(directory: daemon.directory)
        defer { again.kill() }
        #expect(try Self.apps(again).isEmpty)
    }

    @Test("a store with a garbage page is refused, naming the file, what SQLite found and the ways out")
    func garbagePage() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try Self.registerWithContainer(daemon)
        // A clean stop checkpoints: every table is in the main file.
        daemon.send(SIGTERM)
        #expect(daemon.waitForExit(timeout: 20) == 0)
        let path = daemon.stateDirectory + "/state.sqlite"
        let store = try BAStore.open(path: path)
        let root = try store.rootPage(of: "app")
        try store.close()
        #expect(root.page > 1 && root.pageSize > 0)

        // Garbage over the app table's page, as a bad sector or a stray write would leave it.
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        try handle.seek(toOffset: UInt64((root.page - 1) * root.pageSize))
        var generator = SeededGenerator(state: 19)
        try handle.write(
            contentsOf: Data((0..<root.pageSize).map { _ in UInt8.random(in: 0...255, using: &generator) }))
        try handle.close()

        let refused = try runDaemonToExit(stateDirectory: daemon.stateDirectory, socketPath: daemon.socketPath)
        #expect(refused.status == 1)
        for words in [path, "damaged", "SQLite found", ".recover", "backup", "move"] {
            #expect(refused.stderr.contains(words), "missing \(words.debugDescription) in: \(refused.stderr)")
        }
    }

    /// A state folder on a file system mounted read-only said only "errno: 30".
    @Test(
        "a read-only state folder: basd says what is wrong and how to fix it",
        .enabled(if: SmallFileSystem.available, "needs `mount -t tmpfs` (root); skipped where it is not permitted"))
    func readOnlyStateFolder() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.path + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let mount = try runProcessBlocking(
            "/bin/mount", ["-t", "tmpfs", "-o", "ro,size=1m,mode=0700", "tmpfs", state], environment: [:],
            currentDirectory: nil)
        try #require(mount.status == 0, "mount -o ro: \(mount.stderr)")
        defer { SmallFileSystem.unmount(state) }

        let refused = try runDaemonToExit(stateDirectory: state, socketPath: directory.path + "/run/basd.sock")
        #expect(refused.status == 1)
        for words in [state, "Read-only file system", "mounted read-only", "--state-dir"] {
            #expect(refused.stderr.contains(words), "missing \(words.debugDescription) in: \(refused.stderr)")
        }
        #expect(!refused.stderr.contains("errno: 30"), "\(refused.stderr)")
    }
}
