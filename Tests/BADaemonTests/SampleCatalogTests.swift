import BAAssetServer
import BASampleAssets
import BATestSupport
import Foundation
import Testing

/// The sample app's asset set (`Examples/SampleApp`) written out as an asset server's root: the
/// catalog as committed, every generated file from its `generate` entry, and the manifest from
/// its template.
struct SampleAssetSet {
    let root: TemporaryDirectory
    /// Every asset's bytes by identifier: the manifest's three and the catalog's three.
    let contents: [String: [UInt8]]
    private let template: String

    init() throws {
        root = try TemporaryDirectory()
        template = try String(
            contentsOfFile: BuildProducts.source("Examples/SampleApp/manifest.template.json"), encoding: .utf8)
        let catalog = try Data(
            contentsOf: URL(fileURLWithPath: BuildProducts.source("Examples/SampleApp/assets/catalog.json")))
        try catalog.write(to: root.url.appendingPathComponent("catalog.json"))
        var contents = ["catalog": Array(catalog)]
        // The manifest's URLs are "{{BASE_URL}}/path", the catalog's relative to the catalog (at the root).
        let entries =
            try Self.entries(Data(template.utf8)).map { ($0, "{{BASE_URL}}/") } + Self.entries(catalog).map { ($0, "") }
        for (entry, prefix) in entries {
            guard let generate = entry["generate"] as? [String: Any] else { continue }
            let identifier = try #require(entry["identifier"] as? String)
            let url = try #require(entry["url"] as? String)
            let seed = try #require(generate["seed"] as? Int)
            let size = try #require(generate["size"] as? Int)
            let bytes = SampleAssets.bytes(seed: seed, size: size)
            let file = root.url.appendingPathComponent(String(url.dropFirst(prefix.count)))
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: file)
            contents[identifier] = bytes
        }
        self.contents = contents
    }

    static func entries(_ json: Data) throws -> [[String: Any]] {
        let object = try JSONSerialization.jsonObject(with: json) as? [String: Any]
        return try #require(object?["assets"] as? [[String: Any]])
    }

    /// The manifest, its URLs on `baseURL` (no trailing slash).
    func manifest(baseURL: String) -> [UInt8] {
        Array(template.replacingOccurrences(of: "{{BASE_URL}}", with: baseURL).utf8)
    }

    func remove() { root.remove() }
}

/// The catalog scenario of Apple's talks, end to end: `ba install` of the sample app with a real
/// basd, the sample extension (Swift or C) in runners, and the loopback asset server serving
/// `Examples/SampleApp`'s asset set. No app process runs: every finished or failed download goes
/// to the extension.
@Suite("the sample app's catalog, end to end", .timeLimit(.minutes(5)))
struct SampleCatalogTests {
    let ba = BuildProducts.executable("ba")
    static let libraries = ["SampleSwiftExtension", "SampleCExtension"]

    static func container(_ daemon: DaemonProcess) -> String {
        daemon.stateDirectory + "/groups/" + SampleAppFixture.group
    }

    /// Polls the container's `Assets/` (the extension renames files into it, so a file there is
    /// whole) until it holds `identifiers`; bounded.
    static func waitForAssets(_ identifiers: Set<String>, _ daemon: DaemonProcess) async throws {
        let folder = container(daemon) + "/Assets"
        _ = try await CLIQueries.poll(
            "Assets/ to hold \(identifiers.sorted())", daemon, timeout: 120,
            read: { Set((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []) },
            until: { $0.isSuperset(of: identifiers) })
    }

    static func rows(_ daemon: DaemonProcess) async throws -> [[String: Any]] {
        try await CLIQueries.downloadRows(daemon, app: SampleAppFixture.bundleIdentifier)
    }

    @Test(
        "ba install: the essentials before it returns; the finished catalog wakes the extension, which schedules the catalog's assets; all end in Assets/",
        arguments: libraries)
    func theCatalogFillsTheContainer(library: String) async throws {
        let assets = try SampleAssetSet()
        defer { assets.remove() }
        let server = try await AssetServer.start(root: assets.root.url)
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(
            server: server, manifest: assets.manifest(baseURL: server.baseURL), extensionLibrary: library)
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        #expect(install.stdout.contains("scheduled 2 essential and 1 other download(s)"), "\(install.stdout)")

        try await Self.waitForAssets(Set(assets.contents.keys), daemon)
        for (identifier, bytes) in assets.contents.sorted(by: { $0.key < $1.key }) {
            let kept = FileManager.default.contents(atPath: Self.container(daemon) + "/Assets/" + identifier)
            #expect(kept == Data(bytes), "\(identifier): \(kept?.count ?? -1) bytes")
        }
        #expect(
            await daemon.logged("\(library): scheduled 3 assets from the catalog"), "\(daemon.standardError)")
        // One download per asset, each finished: the catalog's are non-essential, checked by
        // SHA-256, with their URLs resolved against the catalog's own URL.
        let rows = try await Self.rows(daemon)
        #expect(rows.count == assets.contents.count, "\(rows)")
        #expect(rows.allSatisfy { $0["state"] as? String == "finished" }, "\(rows)")
        for identifier in ["level-2", "level-3", "soundtrack"] {
            let row = try #require(rows.first { $0["identifier"] as? String == identifier })
            #expect(row["essential"] as? Bool == false)
            #expect((row["url"] as? String)?.hasPrefix(server.baseURL + "/") == true, "\(row)")
        }
        #expect(server.requests(for: "/levels/level-3.pak").count == 1)
        // Every delivered file was moved: none is left in basd's delivery folder.
        let delivery = daemon.stateDirectory + "/transfers/" + SampleAppFixture.group + "/finished"
        let left = try FileManager.default.contentsOfDirectory(atPath: delivery)
        #expect(left.isEmpty, "\(left)")
    }

    /// Runs the sample app (Examples/SampleApp/Sources) against `daemon`, as `ba demo` does.
    static func runApp(
        _ fixture: SampleAppFixture, _ daemon: DaemonProcess, deadline: Int
    ) async throws
        -> ProcessOutput
    {
        try await runProcess(
            BuildProducts.executable("SampleApp"), [fixture.appDirectory, "--deadline", String(deadline)],
            environment: ["BA_SOCKET": daemon.socketPath])
    }

    @Test("the sample app downloads again what is missing, gives up after a second failure, stops at its deadline")
    func theAppFetchesWhatIsMissing() async throws {
        let assets = try SampleAssetSet()
        defer { assets.remove() }
        let server = try await AssetServer.start(root: assets.root.url)
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(server: server, manifest: assets.manifest(baseURL: server.baseURL))
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        try await Self.waitForAssets(Set(assets.contents.keys), daemon)
        let folder = Self.container(daemon) + "/Assets/"

        // Missing and not downloading (every download finished): the app schedules it again, in
        // the foreground, and moves it into place.
        try FileManager.default.removeItem(atPath: folder + "level-2")
        let refetch = try await Self.runApp(fixture, daemon, deadline: 60)
        #expect(refetch.status == 0, "\(refetch.stdout)\(refetch.stderr)")
        #expect(refetch.stdout.contains("app: downloading level-2 in the foreground"), "\(refetch.stdout)")
        #expect(refetch.stdout.contains("app: finished level-2: moved to Assets/level-2"), "\(refetch.stdout)")
        #expect(FileManager.default.contents(atPath: folder + "level-2") == Data(assets.contents["level-2"] ?? []))
        // The install's request, then the app's (two if its promotion restarted a background one).
        #expect(server.requests(for: "/levels/level-2.pak").count >= 2)

        // Missing, and the server answers 404: asked for twice, then the app gives up (exit 1).
        try FileManager.default.removeItem(atPath: folder + "soundtrack")
        server.setBehavior(.status(404), for: "/audio/soundtrack.m4a")
        let givenUp = try await Self.runApp(fixture, daemon, deadline: 60)
        #expect(givenUp.status == 1, "\(givenUp.stdout)\(givenUp.stderr)")
        for line in ["downloading soundtrack", "downloading again soundtrack", "giving up: soundtrack failed twice"] {
            #expect(givenUp.stdout.contains("app: " + line), "\(line): \(givenUp.stdout)")
        }
        #expect(server.requests(for: "/audio/soundtrack.m4a").count >= 3)
        #expect(!FileManager.default.fileExists(atPath: folder + "soundtrack"))

        // Missing and slow (16 KiB/s for 8 MiB), and a deadline that passes at once: the app stops,
        // exit 1, rather than wait on (a deadline that passed while no one waited used to be lost).
        server.setBehavior(nil, for: "/audio/soundtrack.m4a")
        server.setBehavior(.trickle(bytesPerSecond: 16 << 10), for: "/levels/level-3.pak")
        try FileManager.default.removeItem(atPath: folder + "level-3")
        let app = try ChildProcess(
            BuildProducts.executable("SampleApp"), [fixture.appDirectory, "--deadline", "0"],
            environment: ["BA_SOCKET": daemon.socketPath])
        defer { app.killGroup() }
        #expect(app.waitForExit(timeout: 30) == 1, "\(app.stdout)\(app.stderr)")
        let stopped = try #require(
            app.stdout.firstMatch(of: /app: still waiting for (.*) at the deadline/), "\(app.stdout)")
        #expect(stopped.1.contains("level-3"), "\(app.stdout)")
    }

    @Test(
        "a failed essential download (404 once) is re-queued by the extension as non-essential and arrives",
        arguments: libraries)
    func aFailedEssentialComesBackNonEssential(library: String) async throws {
        let assets = try SampleAssetSet()
        defer { assets.remove() }
        let server = try await AssetServer.start(root: assets.root.url)
        defer { Task { try? await server.shutdown() } }
        server.setBehavior(.status(404, times: 1), for: "/levels/level-1.pak")
        let fixture = try SampleAppFixture(
            server: server, manifest: assets.manifest(baseURL: server.baseURL), extensionLibrary: library)
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 20, "\(install.stdout)\(install.stderr)")
        #expect(install.stderr.contains("essential download \"level-1\" failed"), "\(install.stderr)")

        try await Self.waitForAssets(["level-1"], daemon)
        let kept = FileManager.default.contents(atPath: Self.container(daemon) + "/Assets/level-1")
        #expect(kept == Data(assets.contents["level-1"] ?? []))
        #expect(
            await daemon.logged("\(library): re-queued level-1 as a non-essential download"),
            "\(daemon.standardError)")
        #expect(server.requests(for: "/levels/level-1.pak").count == 2)
        let level1 = try await Self.rows(daemon).filter { $0["identifier"] as? String == "level-1" }
        #expect(
            level1.map { "\($0["state"] as? String ?? "?") essential=\($0["essential"] as? Bool ?? false)" }.sorted()
                == ["failed essential=true", "finished essential=false"], "\(level1)")
    }
}
