import BAAssetServer
import BATestSupport
import Foundation
import Testing

@testable import BADaemon

/// Apps registered the Linux way: a registration (an app directory or a symlink to one) dropped
/// into `background-assets/apps/` of `$XDG_DATA_DIRS` or `$XDG_DATA_HOME` is installed by a
/// running basd (essential content first), updated when its Info.plist changes, uninstalled when
/// it goes; a manual `ba install` elsewhere is left alone.
@Suite("apps discovered in the XDG drop-in folders", .timeLimit(.minutes(3)))
struct AppDiscoveryTests {
    let ba = BuildProducts.executable("ba")

    /// `ba apps --json`'s apps by bundle identifier.
    static func apps(_ daemon: DaemonProcess) async throws -> [String: [String: Any]] {
        let listed = try await runProcess(
            BuildProducts.executable("ba"), ["apps", "--json", "--socket", daemon.socketPath])
        guard listed.status == 0, let data = listed.stdout.data(using: .utf8) else {
            throw HarnessError("ba apps failed: \(listed.stdout)\(listed.stderr)")
        }
        let object = try JSONSerialization.jsonObject(with: data)
        let list = (object as? [[String: Any]]) ?? ((object as? [String: Any])?["apps"] as? [[String: Any]]) ?? []
        return Dictionary(
            list.map { (($0["bundleIdentifier"] as? String) ?? "", $0) }, uniquingKeysWith: { a, _ in a })
    }

    @Test(
        "a registration dropped into XDG_DATA_DIRS installs the app with its essential pack; a new Info.plist updates it; removing the registration uninstalls it"
    )
    func dropInInstallUpdateUninstall() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let config = PackFixture.random(80_000, seed: 51)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["config.bin": config])
        try await fixture.publish(["base"], version: 1)
        let share = fixture.directory.path + "/share"
        let home = fixture.directory.path + "/home-share"
        let folder = share + "/background-assets/apps"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let daemon = try await DaemonProcess.start(environment: ["XDG_DATA_DIRS": share, "XDG_DATA_HOME": home])
        defer { daemon.kill() }
        // A manual install elsewhere: never touched by discovery.
        let manual = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(manual.status == 0, "\(manual.stdout)\(manual.stderr)")
        _ = try await runProcess(ba, ["uninstall", PackFixture.app, "--socket", daemon.socketPath])

        // The package's registration: a symlink to the app's directory.
        try FileManager.default.createSymbolicLink(atPath: folder + "/game", withDestinationPath: fixture.appDirectory)
        let installed = try await CLIQueries.poll(
            "the app to be installed from the drop-in folder", daemon, timeout: 30,
            read: { try await Self.apps(daemon) }, until: { $0[PackFixture.app] != nil })
        #expect(installed[PackFixture.app]?["appDirectory"] as? String == folder + "/game", "\(installed)")
        _ = try await fixture.waitForPacks(daemon, "the essential pack") { $0["base"]?["localVersion"] as? Int == 1 }
        #expect(
            FileManager.default.contents(atPath: PackFixture.packPath(daemon, "base") + "/base/config.bin")
                == Data(config))
        #expect(await daemon.logged("app discovery: \(folder)/game: \(PackFixture.app) 1.0 installed"))

        // The package is upgraded: its Info.plist says 1.1.
        let plist = fixture.appDirectory + "/Info.plist"
        var info = try #require(
            try PropertyListSerialization.propertyList(from: Data(contentsOf: URL(fileURLWithPath: plist)), format: nil)
                as? [String: Any])
        info["CFBundleShortVersionString"] = "1.1"
        let data = try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
        try data.write(to: URL(fileURLWithPath: plist + ".new"))
        _ = rename(plist + ".new", plist)
        _ = try await CLIQueries.poll(
            "the app to be updated", daemon, timeout: 30, read: { try await Self.apps(daemon) },
            until: { $0[PackFixture.app]?["version"] as? String == "1.1" })

        // The package is removed: so is the app, and its packs.
        try FileManager.default.removeItem(atPath: folder + "/game")
        _ = try await CLIQueries.poll(
            "the app to be uninstalled", daemon, timeout: 30, read: { try await Self.apps(daemon) },
            until: { $0[PackFixture.app] == nil })
        #expect(await daemon.logged("is gone: uninstalling \(PackFixture.app)"))
    }

    @Test(
        "a registration whose Info.plist is wrong is logged and not installed; one of the same name in XDG_DATA_HOME hides it and is installed"
    )
    func badRegistrationThenFixed() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["c.bin": [1, 2, 3]])
        try await fixture.publish(["base"], version: 1)
        let share = fixture.directory.path + "/share"
        let home = fixture.directory.path + "/home-share"
        for base in [share, home] {
            try FileManager.default.createDirectory(
                atPath: base + "/background-assets/apps", withIntermediateDirectories: true)
        }
        // The system's registration is broken; the user's, of the same name, is the app.
        let broken = fixture.directory.path + "/Broken"
        try FileManager.default.createDirectory(atPath: broken, withIntermediateDirectories: true)
        try Data("not a plist".utf8).write(to: URL(fileURLWithPath: broken + "/Info.plist"))
        try FileManager.default.createSymbolicLink(
            atPath: share + "/background-assets/apps/game", withDestinationPath: broken)
        try FileManager.default.createSymbolicLink(
            atPath: share + "/background-assets/apps/other", withDestinationPath: broken)
        let daemon = try await DaemonProcess.start(environment: ["XDG_DATA_DIRS": share, "XDG_DATA_HOME": home])
        defer { daemon.kill() }
        _ = try await CLIQueries.poll(
            "basd to log the broken registration", daemon, timeout: 30, read: { daemon.standardError },
            until: { $0.contains("/apps/other cannot be installed") })
        #expect(try await Self.apps(daemon).isEmpty)

        try FileManager.default.createSymbolicLink(
            atPath: home + "/background-assets/apps/game", withDestinationPath: fixture.appDirectory)
        let installed = try await CLIQueries.poll(
            "the user's registration to be installed", daemon, timeout: 30, read: { try await Self.apps(daemon) },
            until: { $0[PackFixture.app] != nil })
        #expect(installed[PackFixture.app]?["appDirectory"] as? String == home + "/background-assets/apps/game")
    }

    @Test("the drop-in folders: XDG_DATA_HOME first, then XDG_DATA_DIRS, with their defaults; relative entries ignored")
    func folders() {
        let table: [([String: String], [String])] = [
            (
                ["HOME": "/home/u"],
                [
                    "/home/u/.local/share/background-assets/apps", "/usr/local/share/background-assets/apps",
                    "/usr/share/background-assets/apps",
                ]
            ),
            (
                ["HOME": "/home/u", "XDG_DATA_HOME": "/d/", "XDG_DATA_DIRS": "/a:rel:/b/:/a"],
                [
                    "/d/background-assets/apps", "/a/background-assets/apps", "/b/background-assets/apps",
                ]
            ),
            (["XDG_DATA_DIRS": ""], ["/usr/local/share/background-assets/apps", "/usr/share/background-assets/apps"]),
        ]
        for (environment, expected) in table {
            #expect(AppDiscovery.folders(environment) == expected, "\(environment)")
        }
    }
}
