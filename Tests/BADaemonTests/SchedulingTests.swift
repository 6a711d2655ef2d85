import BAAssetServer
import BACore
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// basd's scheduling end to end: its settings file, periodic runs on its own timer, the daily
/// runtime allowance, the user's switches, quarantine, and purging (docs/scheduling.md,
/// docs/purging.md). The rules themselves are unit-tested with an injected clock in
/// BASchedulingTests; here the real basd applies them.
@Suite("basd scheduling, switches, quarantine and purging", .timeLimit(.minutes(3)))
struct SchedulingTests {
    let ba = BuildProducts.executable("ba")
    static let app = SampleAppFixture.bundleIdentifier

    /// basd with `settings` in its `config.json`.
    static func daemon(settings: [String: Any]) async throws -> DaemonProcess {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/state", withIntermediateDirectories: true)
        try JSONSerialization.data(withJSONObject: settings).write(
            to: URL(fileURLWithPath: directory.path + "/state/config.json"))
        return try await DaemonProcess.start(directory: directory)
    }

    /// Polls `ba apps` until `condition` holds (bounded).
    func waitForApp(
        _ daemon: DaemonProcess, _ what: String, until condition: ([String: Any]) -> Bool
    ) async throws
        -> [String: Any]
    {
        try await CLIQueries.poll(
            what, daemon, timeout: 30, read: { try await CLIQueries.app(daemon) }, until: condition)
    }

    static func runs(_ app: [String: Any]) -> [(event: String, verdict: String)] {
        (app["lastRuns"] as? [[String: Any]] ?? []).map {
            ($0["event"] as? String ?? "", $0["verdict"] as? String ?? "")
        }
    }

    @Test("a malformed config.json stops basd at start, naming the file and the key")
    func malformedSettings() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(atPath: directory.path + "/state", withIntermediateDirectories: true)
        try Data(#"{"backgroundActivity": "no"}"#.utf8).write(
            to: URL(fileURLWithPath: directory.path + "/state/config.json"))
        let run = try runDaemonToExit(
            stateDirectory: directory.path + "/state", socketPath: directory.path + "/basd.sock")
        #expect(run.status != 0)
        #expect(run.stderr.contains("config.json") && run.stderr.contains("backgroundActivity"), "\(run.stderr)")
    }

    @Test("periodic runs come from basd's own timer, and stop once the daily runtime allowance is used up")
    func periodicRunsAndAllowance() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(
                    identifier: "news", path: "/news.bin", contents: SampleAppFixture.bytes(100, seed: 1),
                    essential: false)
            ])
        defer { fixture.remove() }
        let daemon = try await Self.daemon(settings: [
            "periodicBaseIntervalSeconds": 0.4, "periodicMinimumIntervalSeconds": 0.2,
            "periodicMaximumIntervalSeconds": 0.8, "dailyRuntimeAllowanceSeconds": 0.001,
        ])
        defer { daemon.kill() }
        let install = try await runProcess(
            ba, ["install", fixture.appDirectory, "--no-wait", "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")

        // The install used up the (tiny) allowance; a periodic run is due within a second and refused.
        _ = try await CLIQueries.poll(
            "the refusal in basd's log", daemon, timeout: 30, read: { daemon.standardError },
            until: { $0.contains("periodic run refused: daily runtime allowance") })
        let app = try await CLIQueries.app(daemon)
        #expect(Self.runs(app).map(\.event) == ["install"], "no periodic run went past the allowance: \(app)")
        #expect((app["runtimeRemainingSeconds"] as? Double ?? -1) == 0, "\(app)")
        #expect(app["nextPeriodicRun"] as? Double != nil)

        // `ba simulate` bypasses the allowance (as Apple's tool does).
        let simulated = try await runProcess(
            ba, ["simulate", "-s", "--periodic", "-b", Self.app, "--socket", daemon.socketPath])
        #expect(simulated.status == 0, "\(simulated.stdout)\(simulated.stderr)")
        #expect(simulated.stdout.contains("extension periodic: ok"), "\(simulated.stdout)")
    }

    @Test("with an allowance to spare, basd runs the periodic check by itself")
    func periodicRunsHappen() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(
                    identifier: "news", path: "/news.bin", contents: SampleAppFixture.bytes(100, seed: 1),
                    essential: false)
            ])
        defer { fixture.remove() }
        let daemon = try await Self.daemon(settings: [
            "periodicBaseIntervalSeconds": 0.4, "periodicMinimumIntervalSeconds": 0.2,
            "periodicMaximumIntervalSeconds": 0.8,
        ])
        defer { daemon.kill() }
        let install = try await runProcess(
            ba, ["install", fixture.appDirectory, "--no-wait", "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        let app = try await waitForApp(daemon, "a periodic run") { Self.runs($0).contains { $0 == ("periodic", "ok") } }
        // Newest first, at most 5: on a slow machine several periodic runs and a download's event wake
        // may have pushed the install out of the list; where it is still there, it is older than them.
        let events = Self.runs(app).map(\.event)
        if let install = events.firstIndex(of: "install") {
            #expect(
                events[..<install].contains("periodic") && !events[(install + 1)...].contains("periodic"), "\(events)")
        }
    }

    @Test("a content request made while the extension is in a call waits for it, then runs")
    func oneCallAtATime() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(server: server, assets: [], extensionLibrary: "BATestHang")
        defer { fixture.remove() }
        // The hanging calls end when the test kills their runners, not at a deadline: no race with
        // the time `ba simulate` takes to start on a loaded machine.
        let daemon = try await Self.daemon(settings: ["extensionCallTimeoutSeconds": 60, "quarantineThreshold": 10])
        defer { daemon.kill() }
        let basd = daemon.pid
        async let install = runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        let first = try await CLIQueries.poll(
            "the install's runner", daemon, timeout: 30, read: { Self.runners(of: basd) }, until: { !$0.isEmpty })
        async let simulated = runProcess(
            ba, ["simulate", "periodic", "--app", Self.app, "--socket", daemon.socketPath])
        _ = try await CLIQueries.poll(
            "the simulation waiting for the install's call", daemon, timeout: 30, read: { daemon.standardError },
            until: { $0.contains("periodic waits for the extension's current call to end") })
        #expect(Self.runners(of: basd) == first, "one call at a time")

        // The runner's process group (it and the hang's forked child), and the runner itself.
        kill(-first[0], SIGKILL)
        kill(first[0], SIGKILL)
        let installed = try await install
        #expect(installed.stdout.contains("extension install: crashed"), "\(installed.stdout)\(installed.stderr)")
        let second = try await CLIQueries.poll(
            "the simulation's runner", daemon, timeout: 30, read: { Self.runners(of: basd) },
            until: { !$0.isEmpty && $0 != first })
        kill(-second[0], SIGKILL)
        kill(second[0], SIGKILL)
        let simulation = try await simulated
        #expect(simulation.status == 13, "a real run, ended: \(simulation.stdout)\(simulation.stderr)")
        #expect(simulation.stdout.contains("extension periodic: crashed"), "\(simulation.stdout)")
        let runs = Self.runs(try await CLIQueries.app(daemon)).map(\.event)
        #expect(runs.prefix(2) == ["periodic", "install"], "newest first: \(runs)")
    }

    /// The pids of basd's extension runners (its children named ba-extension-runner), from /proc.
    static func runners(of basd: Int32) -> [Int32] {
        // "PID (COMM) STATE PPID …"; COMM is cut to 15 bytes and may hold spaces.
        var parents: [Int32: Int32] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")"),
                stat[stat.index(after: open)..<close] == "ba-extension-ru"
            else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, let parent = Int32(fields[1]) { parents[pid] = parent }
        }
        // A call's runner: a child of basd, or of basd's warm runner (which forks one per call);
        // the warm runner itself makes no call.
        func isWarmRunner(_ pid: Int32) -> Bool {
            let command = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
            return command.contains("--zygote")
        }
        // (Its forked children keep its command line.)
        return parents.compactMap { pid, parent -> Int32? in
            if parent == basd { return isWarmRunner(pid) ? nil : pid }
            if parents[parent] == basd, isWarmRunner(parent) { return pid }
            return nil
        }.sorted()
    }

    @Test("backgroundActivity off: no extension run (111); inAppContent off: no run before launch, no essentials (109)")
    func userSwitches() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(
                    identifier: "core", path: "/core.bin", contents: SampleAppFixture.bytes(100, seed: 1),
                    essential: true)
            ])
        defer { fixture.remove() }

        let quiet = try await Self.daemon(settings: ["backgroundActivity": false])
        defer { quiet.kill() }
        let refused = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", quiet.socketPath])
        #expect(refused.status == 34, "registered, the extension not called: \(refused.stdout)\(refused.stderr)")
        #expect(
            refused.stdout.contains("background activity is off") && refused.stdout.contains("111"), "\(refused.stdout)"
        )
        #expect(refused.stderr.contains("stays registered"), "\(refused.stderr)")
        let simulated = try await runProcess(
            ba, ["simulate", "periodic", "--app", Self.app, "--socket", quiet.socketPath])
        #expect(simulated.status == 34 && simulated.stdout.contains("111"), "\(simulated.stdout)\(simulated.stderr)")

        let noContent = try await Self.daemon(settings: ["inAppContent": false])
        defer { noContent.kill() }
        let skipped = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", noContent.socketPath])
        #expect(skipped.status == 34, "\(skipped.stdout)\(skipped.stderr)")
        #expect(skipped.stdout.contains("in-app content is off"), "\(skipped.stdout)")
        #expect(server.requests(for: "/manifest.json").isEmpty, "no manifest fetched for a run that does not happen")
        // After launch the extension runs, but an essential download is still refused.
        try CLIQueries.launch(noContent, app: Self.app)
        let update = try await runProcess(
            ba, ["simulate", "update", "--app", Self.app, "--socket", noContent.socketPath])
        #expect(update.stdout.contains("refused core") && update.stdout.contains("error 109"), "\(update.stdout)")
    }

    @Test("an extension that crashes is quarantined after N runs, shown by ba apps, and released when its file changes")
    func quarantine() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(
                    identifier: "news", path: "/news.bin", contents: SampleAppFixture.bytes(100, seed: 1),
                    essential: false)
            ],
            extensionLibrary: "BATestCrash")
        defer { fixture.remove() }
        let daemon = try await Self.daemon(settings: ["quarantineThreshold": 2])
        defer { daemon.kill() }

        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 13, "crashed: \(install.stdout)\(install.stderr)")
        #expect(install.stdout.contains("extension install: crashed"), "\(install.stdout)")
        let second = try await runProcess(ba, ["simulate", "update", "--app", Self.app, "--socket", daemon.socketPath])
        #expect(second.status == 13, "\(second.stdout)\(second.stderr)")
        let third = try await runProcess(ba, ["simulate", "update", "--app", Self.app, "--socket", daemon.socketPath])
        #expect(third.status == 34, "\(third.stdout)\(third.stderr)")
        #expect(third.stdout.contains("quarantined") && third.stdout.contains("crashed 2 times"), "\(third.stdout)")
        let listed = try await CLIQueries.app(daemon)
        #expect((listed["quarantine"] as? String)?.contains("signal 11") == true, "\(listed)")
        let text = try await runProcess(ba, ["apps", "--socket", daemon.socketPath])
        #expect(text.stdout.contains("QUARANTINED"), "\(text.stdout)")

        // A new file at the same path (a fixed extension): released.
        let library = fixture.appDirectory + "/lib/libSampleSwiftExtension.so"
        try FileManager.default.removeItem(atPath: library)
        try FileManager.default.copyItem(atPath: BuildProducts.library("SampleSwiftExtension"), toPath: library)
        let fixed = try await runProcess(ba, ["simulate", "update", "--app", Self.app, "--socket", daemon.socketPath])
        #expect(fixed.status == 0, "\(fixed.stdout)\(fixed.stderr)")
        #expect(fixed.stdout.contains("extension update: ok"), "\(fixed.stdout)")
        #expect(try await CLIQueries.app(daemon)["quarantine"] == nil)

        // --clear-quarantine releases without a new file.
        try FileManager.default.removeItem(atPath: library)
        try FileManager.default.copyItem(atPath: BuildProducts.library("BATestCrash"), toPath: library)
        for _ in 0..<2 {
            _ = try await runProcess(ba, ["simulate", "update", "--app", Self.app, "--socket", daemon.socketPath])
        }
        #expect(try await CLIQueries.app(daemon)["quarantine"] != nil)
        let cleared = try await runProcess(ba, ["apps", "--clear-quarantine", Self.app, "--socket", daemon.socketPath])
        #expect(
            cleared.status == 0 && cleared.stdout.contains("quarantine cleared"), "\(cleared.stdout)\(cleared.stderr)")
        let again = try await runProcess(ba, ["simulate", "update", "--app", Self.app, "--socket", daemon.socketPath])
        #expect(again.status == 13, "runs (and crashes) again: \(again.stdout)")
    }

    @Test(
        "ba purge: a moved, unmodified finished file is purged under the threshold; pending and modified ones are kept")
    func purge() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let contents = SampleAppFixture.bytes(10_000, seed: 2)
        server.setFile("/a.bin", contents: contents)
        server.setFile("/b.bin", contents: contents)
        // Free space is always under this threshold: everything purgeable goes. basd does not purge
        // on its own here (its automatic purge, tested in-process with an injected free space,
        // would delete the moved file before the dry run if the test ran past its once-a-minute check).
        let daemon = try await Self.daemon(settings: [
            "purgeFreeSpaceThresholdBytes": Int64(1) << 60, "automaticPurge": false,
        ])
        defer { daemon.kill() }
        let group = "group.com.example.purge"
        let cli = try daemon.cliClient()
        try daemon.register("com.example.purge", version: "1", group: group)
        cli.close()
        // No app subscribed and no extension: the finished files wait in the container for the app.
        let app = try daemon.appClient("com.example.purge")
        for name in ["a", "b"] {
            _ = try app.call(.schedule(DownloadDescription(identifier: name, url: server.url("/\(name).bin"))))
        }
        let rows = try await CLIQueries.pollDownloads(
            "both downloads to finish", daemon, app: "com.example.purge", timeout: 30,
            until: { rows in rows.count == 2 && rows.allSatisfy { $0["state"] as? String == "finished" } })
        app.close()
        let delivered = rows.compactMap { row -> (String, String)? in
            guard let id = row["uniqueIdentifier"] as? String, let name = row["identifier"] as? String else {
                return nil
            }
            return (name, daemon.stateDirectory + "/transfers/\(group)/finished/\(id)-\(name)")
        }
        var report = try await purgePlan(daemon)
        #expect(
            report.allSatisfy { $0["status"] as? String == "pendingDelivery" && $0["wouldDelete"] as? Bool == false },
            "\(report)")

        // The app takes both (a move keeps the inode) and changes b.
        let container = daemon.stateDirectory + "/groups/\(group)"
        for (name, path) in delivered {
            try FileManager.default.moveItem(atPath: path, toPath: container + "/\(name).bin")
        }
        let handle = try #require(FileHandle(forWritingAtPath: container + "/b.bin"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("changed".utf8))
        try handle.close()
        report = try await purgePlan(daemon)
        let byName = Dictionary(report.map { ($0["identifier"] as? String ?? "", $0) }, uniquingKeysWith: { $1 })
        #expect(
            byName["a"]?["status"] as? String == "purgeable" && byName["a"]?["wouldDelete"] as? Bool == true,
            "\(report)")
        #expect(
            byName["b"]?["status"] as? String == "modified" && byName["b"]?["wouldDelete"] as? Bool == false,
            "\(report)")
        #expect(FileManager.default.fileExists(atPath: container + "/a.bin"), "a dry run deletes nothing")

        let purged = try await runProcess(ba, ["purge", "--socket", daemon.socketPath])
        #expect(purged.status == 0, "\(purged.stdout)\(purged.stderr)")
        #expect(purged.stdout.contains("deleted"), "\(purged.stdout)")
        #expect(!FileManager.default.fileExists(atPath: container + "/a.bin"))
        #expect(FileManager.default.fileExists(atPath: container + "/b.bin"), "a modified file is never purged")
    }

    func purgePlan(_ daemon: DaemonProcess) async throws -> [[String: Any]] {
        let output = try await runProcess(ba, ["purge", "--dry-run", "--json", "--socket", daemon.socketPath])
        let object = (try? JSONSerialization.jsonObject(with: Data(output.stdout.utf8))) as? [String: Any]
        return try #require(object?["entries"] as? [[String: Any]], "\(output.stdout)\(output.stderr)")
    }
}
