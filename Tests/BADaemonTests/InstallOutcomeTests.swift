import BAAssetServer
import BACore
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What `ba install` / `ba update` tell an installer when things do not go to plan: the daily
/// runtime allowance does not stop them, a call basd will not make and an essential download
/// refused or failed make them exit non-zero; what a content request cancels takes effect; and
/// manifests never outlive their call (docs/lifecycle.md, docs/cli.md).
@Suite("ba install and update outcomes", .timeLimit(.minutes(3)))
struct InstallOutcomeTests {
    let ba = BuildProducts.executable("ba")
    static let app = SampleAppFixture.bundleIdentifier

    func run(_ daemon: DaemonProcess, _ arguments: [String]) async throws -> ProcessOutput {
        try await runProcess(ba, arguments + ["--socket", daemon.socketPath])
    }

    @Test("a used-up daily runtime allowance does not stop ba update or the install of a new version; it still counts")
    func allowanceDoesNotStopInstall() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(server: server, assets: [])
        defer { fixture.remove() }
        let daemon = try await SchedulingTests.daemon(settings: ["dailyRuntimeAllowanceSeconds": 0.001])
        defer { daemon.kill() }

        let install = try await run(daemon, ["install", fixture.appDirectory])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        #expect((try await CLIQueries.app(daemon)["runtimeRemainingSeconds"] as? Double) == 0, "the install used it up")

        let update = try await run(daemon, ["update", fixture.appDirectory])
        #expect(update.status == 0, "\(update.stdout)\(update.stderr)\n\(daemon.standardError)")
        #expect(update.stdout.contains("extension update: ok"), "\(update.stdout)")

        try fixture.editInfoPlist { $0["CFBundleShortVersionString"] = "2.0" }
        let newVersion = try await run(daemon, ["install", fixture.appDirectory])
        #expect(newVersion.status == 0, "\(newVersion.stdout)\(newVersion.stderr)")
        #expect(newVersion.stdout.contains("extension update: ok"), "\(newVersion.stdout)")

        let app = try await CLIQueries.app(daemon)
        let events = SchedulingTests.runs(app).map(\.event)
        #expect(events.prefix(3) == ["update", "update", "install"], "\(events)")
        #expect(app["runtimeRemainingSeconds"] as? Double == 0, "\(app)")
    }

    @Test("an extension basd will not call (quarantined, background activity off): exit 34, why, the app registered")
    func callRefused() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(server: server, assets: [], extensionLibrary: "BATestCrash")
        defer { fixture.remove() }
        let daemon = try await SchedulingTests.daemon(settings: ["quarantineThreshold": 1])
        defer { daemon.kill() }

        let install = try await run(daemon, ["install", fixture.appDirectory])
        #expect(install.status == 13, "crashed: \(install.stdout)\(install.stderr)")
        for arguments in [["update", fixture.appDirectory], ["update", fixture.appDirectory, "--no-wait", "--json"]] {
            let update = try await run(daemon, arguments)
            #expect(update.status == 34, "\(arguments): \(update.stdout)\(update.stderr)")
            #expect(
                update.stderr.contains("was not called") && update.stderr.contains("quarantined"), "\(update.stderr)")
            #expect(update.stderr.contains("stays registered"), "\(update.stderr)")
        }
        #expect(try await CLIQueries.app(daemon)["bundleIdentifier"] as? String == Self.app)
        #expect(server.requests(for: "/manifest.json").count == 1, "no manifest fetched for a call that is not made")

        let quiet = try await SchedulingTests.daemon(settings: ["backgroundActivity": false])
        defer { quiet.kill() }
        let off = try await run(quiet, ["install", fixture.appDirectory])
        #expect(off.status == 34, "\(off.stdout)\(off.stderr)")
        #expect(
            off.stderr.contains("background activity is off") && off.stderr.contains("stays registered"),
            "\(off.stderr)")
        #expect(try await CLIQueries.app(quiet)["bundleIdentifier"] as? String == Self.app)
    }

    @Test(
        "an essential download refused when scheduled fails ba install (exit 20, naming it and the code), --no-wait too"
    )
    func refusedEssential() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let port = try #require(URL(string: server.baseURL)?.port)
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(
                    identifier: "core", path: "/core.bin", contents: SampleAppFixture.bytes(1000, seed: 1),
                    essential: true),
                .init(
                    identifier: "elsewhere", path: "/elsewhere.bin", contents: SampleAppFixture.bytes(100, seed: 2),
                    essential: true, url: "http://localhost:\(port)/elsewhere.bin"),
                .init(
                    identifier: "extra", path: "/extra.bin", contents: SampleAppFixture.bytes(100, seed: 3),
                    essential: false),
            ]
        ) { info in
            info["BAInitialDownloadRestrictions"] = ["BADownloadDomainAllowList": ["127.0.0.1"]]
        }
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await run(daemon, ["install", fixture.appDirectory])
        #expect(install.status == 20, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        #expect(install.stderr.contains("essential download \"elsewhere\" was refused"), "\(install.stderr)")
        #expect(
            install.stderr.contains("BADownloadDomainAllowList") && install.stderr.contains("error 202"),
            "\(install.stderr)")
        #expect(
            !install.stderr.contains("\"core\""), "the other essential was waited for and finished: \(install.stderr)")
        #expect(install.stdout.contains("finished core"), "\(install.stdout)")

        let update = try await run(daemon, ["update", fixture.appDirectory, "--no-wait"])
        #expect(update.status == 20, "\(update.stdout)\(update.stderr)")
        #expect(
            update.stderr.contains("\"elsewhere\" was refused") && update.stderr.contains("error 202"),
            "\(update.stderr)")
    }

    @Test("an essential download whose size differs from its fileSize fails ba install (exit 20, naming it and why)")
    func essentialSizeMismatch() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(
            server: server,
            assets: [
                .init(
                    identifier: "core", path: "/core.bin", contents: SampleAppFixture.bytes(5000, seed: 4),
                    essential: true,
                    declaredSize: 4000)
            ])
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await run(daemon, ["install", fixture.appDirectory])
        #expect(install.status == 20, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")
        #expect(install.stderr.contains("essential download \"core\" failed"), "\(install.stderr)")
        #expect(install.stderr.contains("5000") && install.stderr.contains("4000"), "\(install.stderr)")
        #expect(install.stderr.contains("stays installed"), "\(install.stderr)")
    }

    @Test("downloads an extension cancels during an update call are cancelled; the others go on")
    func updateCancelsStaleDownloads() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(
            server: server, manifest: Array("cancel stale\n".utf8), extensionLibrary: "BATestSwiftManager")
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await run(daemon, ["install", fixture.appDirectory, "--no-wait"])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError)")

        // The app schedules two downloads that stay active (the server stalls them).
        for name in ["stale", "keep"] {
            server.setFile("/\(name).bin", contents: SampleAppFixture.bytes(10_000, seed: 5))
            server.setBehavior(.stall(afterBytes: 100), for: "/\(name).bin")
        }
        let client = try daemon.appClient(Self.app)
        for name in ["stale", "keep"] {
            _ = try client.call(.schedule(DownloadDescription(identifier: name, url: server.url("/\(name).bin"))))
        }
        client.close()

        let update = try await run(daemon, ["update", fixture.appDirectory, "--no-wait"])
        #expect(update.stdout.contains("extension update: ok"), "\(update.stdout)\(update.stderr)")
        #expect(update.stdout.contains("log: cancel stale: ok"), "the runner accepted it: \(update.stdout)")
        #expect(update.stdout.contains("cancelled stale"), "\(update.stdout)")
        let rows = try await CLIQueries.downloadRows(daemon, app: Self.app)
        let identifiers = rows.compactMap { $0["identifier"] as? String }
        #expect(!identifiers.contains("stale"), "\(rows)")
        #expect(identifiers.contains("keep"), "\(rows)")
        #expect(await daemon.logged("cancelled \"stale\""), "\(daemon.standardError)")
    }

    @Test("an extension removed while its manifest is fetched: the install ends (exit 33), no manifest left, basd free")
    func extensionGoneDuringFetch() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(server: server, assets: [])
        defer { fixture.remove() }
        // A manifest of about 70 bytes at 2 bytes/s: about 35 s to re-register the app meanwhile
        // (8 bytes/s, 9 s, raced a loaded machine, where starting `ba` takes seconds; a stalled
        // manifest would end the fetch at the engine's stall timeout instead).
        server.setBehavior(.trickle(bytesPerSecond: 2), for: "/manifest.json")
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        async let install = run(daemon, ["install", fixture.appDirectory])
        _ = try await CLIQueries.poll(
            "the install's manifest request", daemon, timeout: 30,
            read: { server.requests(for: "/manifest.json").count },
            until: { $0 >= 1 })
        // The same version without its extension: only re-registered, while the first call waits.
        try fixture.editInfoPlist { $0["BAExtensionPath"] = nil }
        let reregistered = try await run(daemon, ["install", fixture.appDirectory])
        #expect(reregistered.status == 0 && reregistered.stdout.contains("already installed"), "\(reregistered.stdout)")

        let installed = try await install
        #expect(installed.status == 34, "\(installed.stdout)\(installed.stderr)\n\(daemon.standardError)")
        #expect(installed.stderr.contains("went away"), "\(installed.stderr)")
        let manifests = try FileManager.default.contentsOfDirectory(atPath: daemon.stateDirectory + "/manifests")
        #expect(manifests.isEmpty, "\(manifests)")
        // The extension is free again: the next request is answered, not queued forever.
        let simulated = try await run(daemon, ["simulate", "periodic", "--app", Self.app])
        #expect(simulated.status == 34 && simulated.stdout.contains("no extension"), "\(simulated.stdout)")
    }

    @Test("manifests left by a basd that died mid-call are removed when basd starts")
    func leftoverManifestsRemovedAtStart() async throws {
        let directory = try TemporaryDirectory()
        let manifests = directory.path + "/state/manifests"
        try FileManager.default.createDirectory(atPath: manifests, withIntermediateDirectories: true)
        let left = manifests + "/com.example.ba.sample-0E6A.manifest"
        try Data("{}".utf8).write(to: URL(fileURLWithPath: left))
        chmod(left, 0o444)
        // The engine keeps a transfer's partial file in a `.ba-partial` folder beside its destination.
        try FileManager.default.createDirectory(atPath: manifests + "/.ba-partial", withIntermediateDirectories: true)
        try Data("{".utf8).write(to: URL(fileURLWithPath: manifests + "/.ba-partial/com.example.ba.sample-1F2B.part"))
        let daemon = try await DaemonProcess.start(directory: directory)
        defer { daemon.kill() }
        // basd removes them before it listens, so they are gone once it printed its listening line.
        let remaining = try FileManager.default.contentsOfDirectory(atPath: manifests)
        #expect(remaining.isEmpty, "\(remaining)")
        #expect(!daemon.standardError.contains("cannot remove"), "\(daemon.standardError)")
    }

    @Test("Apple's spellings: -s --app-install --app-bundle-id, --simulate --app-update -b")
    func appleSpellings() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(server: server, assets: [])
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await run(daemon, ["install", fixture.appDirectory])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")

        let spellings: [(arguments: [String], event: String)] = [
            (["simulate", "-s", "--app-install", "--app-bundle-id", Self.app], "install"),
            (["simulate", "--simulate", "--app-update", "-b", Self.app], "update"),
            (["simulate", "-s", "--periodic", "--app-bundle-id", Self.app], "periodic"),
        ]
        for (arguments, event) in spellings {
            let simulated = try await run(daemon, arguments)
            #expect(simulated.status == 0, "\(arguments): \(simulated.stdout)\(simulated.stderr)")
            #expect(simulated.stdout.contains("extension \(event): ok"), "\(arguments): \(simulated.stdout)")
        }
    }
}
