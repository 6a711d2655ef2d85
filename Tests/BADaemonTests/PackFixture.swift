import BAAssetServer
import BADaemonProtocol
import BAPacks
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A publisher's folder and an app with packs: content in `source/`, published with `ba pack
/// build` and `ba pack publish` into `public/`, which a loopback asset server serves as plain
/// files; the app (no extension) declares `BAHasManagedAssetPacks`.
struct PackFixture {
    let directory: TemporaryDirectory
    let server: AssetServer
    var source: String { directory.path + "/source" }
    var publish: String { directory.path + "/public" }
    var appDirectory: String { directory.path + "/App" }
    static let app = "com.example.packs"
    static let group = "group.com.example.packs"
    let ba = BuildProducts.executable("ba")

    static func make(publicKey: String? = nil) async throws -> PackFixture {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/public", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory.path + "/source", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory.path + "/App", withIntermediateDirectories: true)
        let server = try await AssetServer.start(root: URL(fileURLWithPath: directory.path + "/public"))
        let fixture = PackFixture(directory: directory, server: server)
        var info: [String: Any] = [
            "CFBundleIdentifier": app, "CFBundleShortVersionString": "1.0", "BAAppGroupID": group,
            "BAManifestURL": server.url("/manifest.json"), "BAHasManagedAssetPacks": true,
        ]
        if let publicKey { info["BAAssetPackPublicKey"] = publicKey }
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: fixture.appDirectory + "/Info.plist"))
        return fixture
    }

    func remove() {
        let server = server
        Task { try? await server.shutdown() }
        directory.remove()
    }

    /// Points the app's `BAManifestURL` at `base` + `/manifest.json` (nginx serving the publish
    /// folder) instead of the fixture's own server.
    func readManifest(from base: String) throws {
        let plist = appDirectory + "/Info.plist"
        let info = try String(contentsOfFile: plist, encoding: .utf8).replacingOccurrences(
            of: server.url("/manifest.json"), with: base + "/manifest.json")
        try Data(info.utf8).write(to: URL(fileURLWithPath: plist))
    }

    /// Changes the app's `Info.plist` with `edit`.
    func editInfoPlist(_ edit: (inout [String: Any]) -> Void) throws {
        let url = URL(fileURLWithPath: appDirectory + "/Info.plist")
        guard
            var info = try PropertyListSerialization.propertyList(from: Data(contentsOf: url), format: nil)
                as? [String: Any]
        else { throw HarnessError("the app's Info.plist is not a dictionary") }
        edit(&info)
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0).write(to: url)
    }

    /// Gives the app the test extension `library` (copied into the app's folder, as
    /// `BAExtensionPath` is relative to it); `edit` changes the rest of the `Info.plist`.
    func useExtension(_ library: String, edit: (inout [String: Any]) -> Void = { _ in }) throws {
        try FileManager.default.createDirectory(atPath: appDirectory + "/lib", withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: BuildProducts.library(library), toPath: appDirectory + "/lib/lib\(library).so")
        try editInfoPlist { info in
            info["BAExtensionPath"] = "lib/lib\(library).so"
            edit(&info)
        }
    }

    /// Writes `source/ID/NAME` files and the pack's manifest (`source/ID.json`).
    /// `language`: the manifest's BCP-47 `language` (a localized pack), written as given.
    func write(pack id: String, policy: String, files: [String: [UInt8]], language: String? = nil) throws {
        for (name, bytes) in files {
            let path = source + "/" + id + "/" + name
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }
        let manifest = """
            {"assetPackID": "\(id)", "downloadPolicy": \(policy),
             "fileSelectors": [{"directory": "\(id)"}], "platforms": ["linux"]\(language.map { #", "language": "\#($0)""# } ?? "")}
            """
        try Data(manifest.utf8).write(to: URL(fileURLWithPath: source + "/" + id + ".json"))
    }

    /// `ba pack build` of version `version` of every pack given, then `ba pack publish`.
    /// `baseURL`: where the index and chunks are served from (the fixture's server when nil);
    /// `indexFormat`: `ba pack build --index-format` (format 2 when nil).
    func publish(
        _ packs: [String], version: Int, key: String? = nil, bundleSize: Int? = nil, indexFormat: Int? = nil,
        baseURL: String? = nil
    ) async throws {
        for id in packs {
            let build = try await runProcess(
                ba,
                ["pack", "build", source + "/" + id + ".json", "--version", String(version), "-o", publish]
                    + (bundleSize.map { ["--bundle-size", String($0)] } ?? [])
                    + (indexFormat.map { ["--index-format", String($0)] } ?? []))
            #expect(build.status == 0, "\(build.stdout)\(build.stderr)")
        }
        var arguments = ["pack", "publish", publish, "--base-url", baseURL ?? server.baseURL]
        if let key { arguments += ["--key", key, "--app", Self.app] }
        let published = try await runProcess(ba, arguments)
        #expect(published.status == 0, "\(published.stdout)\(published.stderr)")
    }

    static let essential = #"{"essential": {"installationEventTypes": ["firstInstallation", "subsequentUpdate"]}}"#
    static let prefetch = #"{"prefetch": {"installationEventTypes": ["firstInstallation"]}}"#
    static let onDemand = #"{"onDemand": {}}"#

    /// Where the app reads pack `id`.
    static func packPath(_ daemon: DaemonProcess, _ id: String) -> String {
        daemon.stateDirectory + "/groups/" + group + "/AssetPacks/" + id
    }

    /// `ba packs --app --json`'s packs, by id.
    func packs(_ daemon: DaemonProcess) async throws -> [String: [String: Any]] {
        let listed = try await runProcess(ba, ["packs", "--app", Self.app, "--json", "--socket", daemon.socketPath])
        guard listed.status == 0,
            let object = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any],
            let packs = object["packs"] as? [[String: Any]]
        else { throw HarnessError("ba packs failed: \(listed.stdout)\(listed.stderr)") }
        return Dictionary(packs.map { (($0["assetPackID"] as? String) ?? "", $0) }, uniquingKeysWith: { a, _ in a })
    }

    func waitForPacks(
        _ daemon: DaemonProcess, _ what: String, until condition: ([String: [String: Any]]) -> Bool
    ) async throws -> [String: [String: Any]] {
        try await CLIQueries.poll(what, daemon, timeout: 60, read: { try await packs(daemon) }, until: condition)
    }

    /// `ba packs ensure --no-wait` of `pack` (version 1) whose only bundle hangs on the server: its
    /// download stays under way for as long as the test needs.
    func ensureStalled(_ pack: String, _ daemon: DaemonProcess) async throws {
        server.setBehavior(.stall(afterBytes: 0), for: "/packs/\(pack)/1-0.bundle")
        let ensure = try await runProcess(
            ba, ["packs", "ensure", Self.app, pack, "--no-wait", "--socket", daemon.socketPath])
        #expect(ensure.status == 0, "\(ensure.stdout)\(ensure.stderr)")
    }

    /// The chunk names (SHA-256) of one published version.
    func chunkNames(pack: String, version: Int) throws -> Set<String> {
        Set(try chunks(pack: pack, version: version))
    }

    /// The chunk names (SHA-256) of one published version, in index order.
    func chunks(pack: String, version: Int) throws -> [String] {
        let index = try PackIndex.read(publish + "/" + PackIndex.indexPath(id: pack, version: version))
        return index.files.flatMap { $0.chunks.map(\.sha256) }
    }

    /// Bytes the server sent for chunk requests (each chunk file's size), from request `from` on.
    func chunkBytes(from start: Int) -> (requests: Int, bytes: Int) {
        let requests = server.requests.dropFirst(start).filter { $0.path.hasPrefix("/chunks/") }
        let bytes = requests.reduce(0) { total, request in
            total + ((try? FileManager.default.attributesOfItem(atPath: publish + request.path)[.size] as? Int) ?? 0)
        }
        return (requests.count, bytes)
    }

    static func random(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SeededGenerator(state: seed)
        var bytes = [UInt8](repeating: 0, count: count)
        var index = 0
        while index < count {
            var word = generator.next()
            for _ in 0..<8 where index < count {
                bytes[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
        }
        return bytes
    }
}
