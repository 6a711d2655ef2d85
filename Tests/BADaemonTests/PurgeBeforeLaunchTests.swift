import BAAssetServer
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

/// Essential and pre-launch files are kept until the app launches (issue 23, docs/purging.md "Kept
/// until the app launches"): a real basd, the sample extension moving its files into the app group
/// container, `ba purge` as a process. Free space is always under the threshold here, so every
/// purgeable file goes; basd's automatic purge is off, so only `ba purge` deletes.
@Suite("essential and pre-launch files are kept until the app launches", .timeLimit(.minutes(3)))
struct PurgeBeforeLaunchTests {
    let ba = BuildProducts.executable("ba")
    static let app = SampleAppFixture.bundleIdentifier

    /// `ba purge [--dry-run] --json`'s entries, by identifier, and its report.
    func purge(
        _ daemon: DaemonProcess, dryRun: Bool
    ) async throws -> (
        entries: [String: [String: Any]], report: [String: Any]
    ) {
        let output = try await runProcess(
            ba, ["purge", "--json", "--socket", daemon.socketPath] + (dryRun ? ["--dry-run"] : []))
        let report = (try? JSONSerialization.jsonObject(with: Data(output.stdout.utf8))) as? [String: Any]
        let entries = try #require(report?["entries"] as? [[String: Any]], "\(output.stdout)\(output.stderr)")
        return (
            Dictionary(entries.map { ($0["identifier"] as? String ?? "", $0) }, uniquingKeysWith: { $1 }),
            report ?? [:]
        )
    }

    /// Polls the dry run until every identifier in `identifiers` is listed and none is still owed
    /// to the app (the extension moves each file into `Assets/` when it is woken for it).
    func waitForDelivery(_ daemon: DaemonProcess, of identifiers: Set<String>) async throws -> [String: [String: Any]] {
        try await CLIQueries.poll(
            "\(identifiers.sorted()) delivered to the container", daemon, timeout: 60,
            read: { try await purge(daemon, dryRun: true).entries },
            until: { entries in
                identifiers.allSatisfy { entries[$0] != nil }
                    && entries.values.allSatisfy { $0["status"] as? String != "pendingDelivery" }
            })
    }

    static func status(_ entry: [String: Any]?) -> String? { entry?["status"] as? String }
    static func reason(_ entry: [String: Any]?) -> String? { entry?["reason"] as? String }
    static func wouldDelete(_ entry: [String: Any]?) -> Bool? { entry?["wouldDelete"] as? Bool }

    @Test(
        "after ba install nothing is purgeable until the app's first launch; after ba update its essential files wait for the next launch"
    )
    func heldUntilLaunch() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let config = SampleAppFixture.bytes(4_096, seed: 3)
        let level = SampleAppFixture.bytes(8_192, seed: 4)
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(identifier: "config", path: "/config.json", contents: config, essential: true),
                .init(identifier: "level-2", path: "/levels/level-2.pak", contents: level, essential: false),
            ])
        defer { fixture.remove() }
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/state", withIntermediateDirectories: true)
        try JSONSerialization.data(withJSONObject: [
            "purgeFreeSpaceThresholdBytes": Int64(1) << 60, "automaticPurge": false,
        ]).write(to: URL(fileURLWithPath: directory.path + "/state/config.json"))
        let daemon = try await DaemonProcess.start(directory: directory)
        defer { daemon.kill() }
        let assets = daemon.stateDirectory + "/groups/\(SampleAppFixture.group)/Assets"

        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        var entries = try await waitForDelivery(daemon, of: ["config", "level-2"])

        // Right after the install: the extension put both in Assets/, unmodified, open by nobody,
        // yet neither is purgeable, essential or not.
        for name in ["config", "level-2"] {
            #expect(Self.status(entries[name]) == "awaitingLaunch", "\(name): \(entries)")
            #expect(Self.reason(entries[name]) == "kept: the app has not launched yet", "\(name): \(entries)")
            #expect(Self.wouldDelete(entries[name]) == false, "\(name): \(entries)")
            #expect(entries[name]?["path"] as? String == assets + "/\(name)", "\(name): \(entries)")
        }
        let table = try await runProcess(ba, ["purge", "--dry-run", "--socket", daemon.socketPath])
        #expect(table.status == 0, "\(table.stdout)\(table.stderr)")
        #expect(
            table.stdout.contains("awaitingLaunch") && table.stdout.contains("the app has not launched yet")
                && !table.stdout.contains("would delete"), "\(table.stdout)")

        // A real purge under the threshold deletes nothing.
        let kept = try await purge(daemon, dryRun: false)
        #expect(kept.report["bytesFreed"] as? Int == 0, "\(kept.report)")
        #expect(FileManager.default.contents(atPath: assets + "/config") == Data(config))
        #expect(FileManager.default.contents(atPath: assets + "/level-2") == Data(level))

        // The first launch: the usual rules.
        try CLIQueries.launch(daemon, app: Self.app)
        entries = try await purge(daemon, dryRun: true).entries
        for name in ["config", "level-2"] {
            #expect(Self.status(entries[name]) == "purgeable", "\(name): \(entries)")
            #expect(Self.wouldDelete(entries[name]) == true, "\(name): \(entries)")
        }

        // Version 2 before any purge: a new essential config and a new non-essential extra.
        let config2 = SampleAppFixture.bytes(2_048, seed: 5)
        let extra = SampleAppFixture.bytes(1_024, seed: 6)
        server.setFile("/config-2.json", contents: config2)
        server.setFile("/extra.bin", contents: extra)
        server.setFile(
            "/manifest.json",
            contents: Array(
                try JSONSerialization.data(withJSONObject: [
                    "applicationGroupIdentifier": SampleAppFixture.group,
                    "assets": [
                        [
                            "identifier": "config", "url": server.url("/config-2.json"), "fileSize": config2.count,
                            "essential": true,
                        ],
                        ["identifier": "extra", "url": server.url("/extra.bin"), "fileSize": extra.count],
                    ],
                ])))
        try fixture.editInfoPlist { $0["CFBundleShortVersionString"] = "2.0" }
        let update = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(update.status == 0, "\(update.stdout)\(update.stderr)\n\(daemon.standardError)")
        #expect(update.stdout.contains("extension update: ok"), "\(update.stdout)")
        entries = try await CLIQueries.poll(
            "version 2's config and extra delivered", daemon, timeout: 60,
            read: { try await waitForDelivery(daemon, of: ["config", "extra", "level-2"]) },
            until: { entries in
                // Version 1's config was replaced (a rename over it): its record is gone.
                (entries["config"]?["size"] as? Int) == config2.count
            })
        // The update's essential file waits for the app's next launch; the rest follows the usual rules.
        #expect(Self.status(entries["config"]) == "awaitingLaunch", "\(entries)")
        #expect(
            Self.reason(entries["config"]) == "kept: essential, and the app has not launched since it was delivered",
            "\(entries)")
        #expect(Self.status(entries["extra"]) == "purgeable", "\(entries)")
        #expect(Self.status(entries["level-2"]) == "purgeable", "\(entries)")

        let purged = try await purge(daemon, dryRun: false)
        #expect(purged.report["bytesFreed"] as? Int == level.count + extra.count, "\(purged.report)")
        #expect(FileManager.default.contents(atPath: assets + "/config") == Data(config2))
        #expect(!FileManager.default.fileExists(atPath: assets + "/level-2"))
        #expect(!FileManager.default.fileExists(atPath: assets + "/extra"))

        // Version 2's first launch: its config may go too.
        try CLIQueries.launch(daemon, app: Self.app)
        let last = try await purge(daemon, dryRun: false)
        #expect(last.report["bytesFreed"] as? Int == config2.count, "\(last.report)")
        #expect(!FileManager.default.fileExists(atPath: assets + "/config"))
    }
}
