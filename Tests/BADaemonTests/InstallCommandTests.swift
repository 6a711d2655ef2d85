import BAAssetServer
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A copy of `Examples/SampleApp` in a temporary directory, its manifest served by a loopback
/// asset server: what `ba install` gets in the field.
struct SampleAppFixture {
    struct Asset {
        var identifier: String
        var path: String
        var contents: [UInt8]
        var essential: Bool
        /// The fileSize the manifest declares (default: the true size).
        var declaredSize: Int?
        /// A URL other than the server's path (another host, say).
        var url: String?
    }

    let directory: TemporaryDirectory
    let appDirectory: String
    let server: AssetServer
    static let bundleIdentifier = "com.example.ba.sample"
    static let group = "group.com.example.ba.sample"

    /// Copies the sample app, points its manifest URL at `server`, links the sample extension
    /// into `lib/`, applies `plist` changes, and serves `assets` and their manifest.
    init(
        server: AssetServer, assets: [Asset], extensionLibrary: String? = nil,
        plist: (inout [String: Any]) -> Void = { _ in }
    ) throws {
        var entries: [[String: Any]] = []
        for asset in assets {
            server.setFile(asset.path, contents: asset.contents)
            entries.append([
                "identifier": asset.identifier, "url": asset.url ?? server.url(asset.path),
                "fileSize": asset.declaredSize ?? asset.contents.count, "essential": asset.essential,
            ])
        }
        let manifest = try JSONSerialization.data(
            withJSONObject: ["applicationGroupIdentifier": Self.group, "assets": entries], options: [.sortedKeys])
        try self.init(server: server, manifest: Array(manifest), extensionLibrary: extensionLibrary, plist: plist)
    }

    /// Copies the sample app, points its manifest URL at `server`, links the extension library
    /// (default: the Swift sample) into `lib/`, applies `plist` changes, and serves `manifest` at
    /// `/manifest.json`; the assets are the server's business.
    init(
        server: AssetServer, manifest: [UInt8], extensionLibrary: String? = nil,
        plist: (inout [String: Any]) -> Void = { _ in }
    ) throws {
        directory = try TemporaryDirectory()
        self.server = server
        appDirectory = directory.path + "/SampleApp"
        let fileManager = FileManager.default
        try fileManager.createDirectory(atPath: appDirectory + "/lib", withIntermediateDirectories: true)
        let source = BuildProducts.source("Examples/SampleApp/Info.plist")
        let data = try Data(contentsOf: URL(fileURLWithPath: source))
        var info = try #require(
            try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        info["BAManifestURL"] = server.url("/manifest.json")
        // The extension's tests serve only its manifest: no asset packs (ba demo has them).
        info["BAHasManagedAssetPacks"] = nil
        plist(&info)
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: appDirectory + "/Info.plist"))
        if let extensionLibrary {
            // A copy, so a test can replace the file.
            try fileManager.copyItem(
                atPath: BuildProducts.library(extensionLibrary),
                toPath: appDirectory + "/lib/libSampleSwiftExtension.so")
        } else {
            try fileManager.createSymbolicLink(
                atPath: appDirectory + "/lib/libSampleSwiftExtension.so",
                withDestinationPath: BuildProducts.library("SampleSwiftExtension"))
        }
        server.setFile("/manifest.json", contents: manifest)
    }

    func remove() { directory.remove() }

    /// Rewrites the app's Info.plist with `change` applied, in `format` (basd reads XML and binary).
    func editInfoPlist(
        format: PropertyListSerialization.PropertyListFormat = .xml, _ change: (inout [String: Any]) -> Void
    ) throws {
        let path = appDirectory + "/Info.plist"
        var info = try #require(
            try PropertyListSerialization.propertyList(from: Data(contentsOf: URL(fileURLWithPath: path)), format: nil)
                as? [String: Any])
        change(&info)
        try PropertyListSerialization.data(fromPropertyList: info, format: format, options: 0)
            .write(to: URL(fileURLWithPath: path))
    }

    /// Deterministic bytes.
    static func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    /// A catalog in the sample's format that lists nothing: the extension's wake for the finished
    /// catalog schedules nothing, so a test sees only its manifest's downloads. (The checked-in
    /// catalog and its assets: `SampleCatalogTests`.)
    static let catalog = Array(#"{"title": "Sample catalog", "assets": []}"#.utf8)
}

/// `ba install` / `ba update` end to end: a real basd, the real sample extension in a runner, a
/// loopback asset server, `ba` as a process.
@Suite("ba install and update", .timeLimit(.minutes(3)))
struct InstallCommandTests {
    let ba = BuildProducts.executable("ba")

    /// `ba downloads --json --app`'s rows for the sample app, by identifier.
    func downloads(_ daemon: DaemonProcess) async throws -> [String: [String: Any]] {
        let rows = try await CLIQueries.downloadRows(daemon, app: SampleAppFixture.bundleIdentifier)
        // An identifier scheduled again after a failure: the new download wins over the failed one.
        return Dictionary(rows.map { (($0["identifier"] as? String) ?? "", $0) }) { first, second in
            (second["state"] as? String) == "failed" ? first : second
        }
    }

    /// Polls `ba downloads` until `condition` holds (bounded).
    func waitForDownloads(
        _ daemon: DaemonProcess, _ what: String, until condition: ([String: [String: Any]]) -> Bool
    ) async throws -> [String: [String: Any]] {
        try await CLIQueries.poll(what, daemon, timeout: 60, read: { try await downloads(daemon) }, until: condition)
    }

    static func state(_ row: [String: Any]?) -> String? { row?["state"] as? String }

    @Test(
        "ba install of the sample app: essentials with progress before it returns, the rest in basd, no manifest left")
    func installSampleApp() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let level1 = SampleAppFixture.bytes(3 << 20, seed: 1)
        let level2 = SampleAppFixture.bytes(2 << 20, seed: 2)
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(
                    identifier: "catalog", path: "/catalog.json", contents: SampleAppFixture.catalog, essential: true),
                .init(identifier: "level-1", path: "/levels/level-1.pak", contents: level1, essential: true),
                .init(identifier: "level-2", path: "/levels/level-2.pak", contents: level2, essential: false),
            ])
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        #expect(install.stdout.contains("com.example.ba.sample 1.0"), "\(install.stdout)")
        #expect(install.stdout.contains("extension install: ok"), "\(install.stdout)")
        #expect(install.stdout.contains("scheduled 2 essential and 1 other download(s)"), "\(install.stdout)")
        // Not a terminal: a line per quarter instead of a bar, and a line per finished essential.
        #expect(install.stdout.contains("essential downloads: 100%"), "\(install.stdout)")
        #expect(install.stdout.contains("finished level-1 (3.0 MiB)"), "\(install.stdout)")
        #expect(install.stdout.contains("finished catalog"), "\(install.stdout)")
        // The extension saw the allowance left after the manifest was counted.
        #expect(install.stdout.contains("allowance left: "), "\(install.stdout)")

        // When ba returned, both essentials were finished.
        let atReturn = try await downloads(daemon)
        #expect(Self.state(atReturn["catalog"]) == "finished", "\(atReturn)")
        #expect(Self.state(atReturn["level-1"]) == "finished", "\(atReturn)")
        // The non-essential one completes in basd afterwards.
        let later = try await waitForDownloads(daemon, "level-2 to finish") { Self.state($0["level-2"]) == "finished" }
        #expect(later["level-2"]?["bytesOnDisk"] as? Int == level2.count, "\(later)")
        // The manifest was fetched once, and its file is gone.
        #expect(server.requests(for: "/manifest.json").count == 1)
        let manifests =
            (try? FileManager.default.contentsOfDirectory(atPath: daemon.stateDirectory + "/manifests")) ?? []
        #expect(manifests.isEmpty, "\(manifests)")

        // The same version again: registered, the extension not called.
        let again = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(again.status == 0)
        #expect(again.stdout.contains("already installed"), "\(again.stdout)")
        #expect(server.requests(for: "/manifest.json").count == 1)
    }

    @Test(
        "a newer version runs .update; --json prints the report and the essentials' events; --no-wait returns at once")
    func updateAndJSON() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(identifier: "catalog", path: "/catalog.json", contents: SampleAppFixture.catalog, essential: true)
            ])
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await runProcess(
            ba, ["install", fixture.appDirectory, "--json", "--no-wait", "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        let lines = install.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        let report = try #require(lines.first?["report"] as? [String: Any], "\(install.stdout)")
        #expect(report["event"] as? String == "install")
        #expect((report["scheduled"] as? [Any])?.count == 1)
        #expect(lines.count == 1, "--no-wait prints no events: \(install.stdout)")

        // Version 2: an update.
        try fixture.editInfoPlist(format: .binary) { $0["CFBundleShortVersionString"] = "2.0" }
        _ = try await waitForDownloads(daemon, "the first catalog to end") { Self.state($0["catalog"]) == "finished" }
        let update = try await runProcess(
            ba, ["install", fixture.appDirectory, "--json", "--socket", daemon.socketPath])
        #expect(update.status == 0, "\(update.stdout)\(update.stderr)\n\(daemon.standardError)")
        let updateLines = update.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        let updateReport = try #require(updateLines.first?["report"] as? [String: Any], "\(update.stdout)")
        #expect(updateReport["event"] as? String == "update")
        #expect(updateReport["previousVersion"] as? String == "1.0")
        #expect(updateLines.dropFirst().contains { $0["kind"] as? String == "finished" }, "\(update.stdout)")

        // `ba update` runs .update even for the same version.
        let forced = try await runProcess(
            ba, ["update", fixture.appDirectory, "--no-wait", "--socket", daemon.socketPath])
        #expect(forced.status == 0, "\(forced.stdout)\(forced.stderr)")
        #expect(forced.stdout.contains("extension update: ok"), "\(forced.stdout)")
    }

    @Test("bad input: not a directory, a broken Info.plist naming the key, an unreachable manifest")
    func badInput() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let missing = try await runProcess(
            ba, ["install", daemon.directory.path + "/nope", "--socket", daemon.socketPath])
        #expect(missing.status == 66, "\(missing.stderr)")

        let broken = try SampleAppFixture(server: server, assets: []) { $0["BAAppGroupID"] = 42 }
        defer { broken.remove() }
        let refused = try await runProcess(ba, ["install", broken.appDirectory, "--socket", daemon.socketPath])
        #expect(refused.status == 33, "\(refused.stderr)")
        #expect(refused.stderr.contains("BAAppGroupID") && refused.stderr.contains("Info.plist"), "\(refused.stderr)")
        #expect(refused.stderr.contains("error 1005"), "\(refused.stderr)")
        // Nothing was registered.
        let apps = try await runProcess(ba, ["apps", "--json", "--socket", daemon.socketPath])
        let listed = (try? JSONSerialization.jsonObject(with: Data(apps.stdout.utf8))) as? [String: Any]
        #expect(apps.status == 0 && (listed?["apps"] as? [Any])?.isEmpty == true, "\(apps.stdout)\(apps.stderr)")

        let noManifest = try SampleAppFixture(server: server, assets: []) {
            $0["BAManifestURL"] = server.url("/missing.json")
        }
        defer { noManifest.remove() }
        let failed = try await runProcess(ba, ["install", noManifest.appDirectory, "--socket", daemon.socketPath])
        #expect(failed.status == 20, "\(failed.stdout)\(failed.stderr)")
        #expect(
            failed.stdout.contains("manifest could not be fetched") && failed.stdout.contains("404"), "\(failed.stdout)"
        )
    }
}
