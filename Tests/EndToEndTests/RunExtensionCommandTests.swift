import BATestSupport
import Foundation
import Testing

/// `ba run-extension` as a real process, as a developer runs it.
@Suite struct RunExtensionCommandTests {
    let ba = BuildProducts.executable("ba")
    let manifest = BuildProducts.source("Examples/Manifests/sample-manifest.json")

    func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> ProcessOutput {
        try await runProcess(ba, ["run-extension"] + arguments, environment: environment)
    }

    func json(_ output: ProcessOutput) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8))
        return try #require(object as? [String: Any], "not a JSON object: \(output.stdout)")
    }

    @Test(arguments: ["install", "update", "periodic"])
    func swiftAndCSamplesReturnTheSameDownloads(event: String) async throws {
        let swift = try await run([
            BuildProducts.library("SampleSwiftExtension"), "--event", event, "--manifest", manifest, "--json",
        ])
        let c = try await run([
            BuildProducts.library("SampleCExtension"), "--event", event, "--manifest", manifest, "--json",
        ])
        #expect(swift.status == 0, "\(swift.stderr)\(swift.stdout)")
        #expect(c.status == 0, "\(c.stderr)\(c.stdout)")
        let swiftDownloads = try json(swift)["downloads"] as? [[String: Any]]
        let cDownloads = try json(c)["downloads"] as? [[String: Any]]
        #expect(swiftDownloads?.count == 5)
        #expect(
            NSArray(array: swiftDownloads ?? []).isEqual(to: cDownloads ?? []), "Swift: \(swift.stdout)\nC: \(c.stdout)"
        )
        let essential = (swiftDownloads ?? []).filter { $0["essential"] as? Bool == true }.compactMap {
            $0["identifier"] as? String
        }
        #expect(essential == (event == "periodic" ? [] : ["catalog", "level-1"]))
        // The table form lists the same rows.
        let table = try await run([BuildProducts.library("SampleCExtension"), "--event", event, "--manifest", manifest])
        #expect(table.stdout.hasPrefix("verdict: ok"))
        #expect(table.stdout.contains("soundtrack"))
    }

    @Test(
        "--event should-download asks a Swift and a C managed extension about each --pack and prints the answers",
        arguments: ["BATestManagedExtension", "BATestShouldDownload"])
    func shouldDownload(library: String) async throws {
        let output = try await run([
            BuildProducts.library(library), "--event", "should-download", "--pack", "base", "--pack",
            "extras:2:1048576", "--json",
        ])
        #expect(output.status == 0, "\(output.stderr)\(output.stdout)")
        let answers = try #require(try json(output)["shouldDownload"] as? [[String: Any]], "\(output.stdout)")
        #expect(answers.compactMap { $0["assetPackID"] as? String } == ["base", "extras"])
        #expect(answers.compactMap { $0["download"] as? Bool } == [true, false])
        let table = try await run([BuildProducts.library(library), "--event", "should-download", "--pack", "extras"])
        #expect(table.stdout.contains("extras: declined"), "\(table.stdout)")
        let missing = try await run([BuildProducts.library(library), "--event", "should-download"])
        #expect(missing.status == 64 && missing.stderr.contains("needs at least one --pack"), "\(missing.stderr)")
    }

    @Test func jsonHasTheDocumentedFields() async throws {
        let output = try await run([
            BuildProducts.library("SampleCExtension"), "--event", "install", "--manifest", manifest, "--json",
        ])
        let object = try json(output)
        #expect(object["verdict"] as? String == "ok")
        #expect(object["durationMs"] is Double)
        let first = try #require((object["downloads"] as? [[String: Any]])?.first)
        for key in ["identifier", "url", "essential", "fileSize", "priority", "applicationGroupIdentifier"] {
            #expect(first[key] != nil, "missing \(key)")
        }
    }

    @Test(
        arguments: [
            ("BATestHang", ["--timeout", "0.5"], 11, "timedOut"),
            ("BATestCrash", [], 13, "crashed"),
            ("BATestHog", ["--memory-limit", "96"], 12, "exceededMemory"),
            ("BATestWrongABI", [], 14, "abiMismatch"),
            ("BATestNoDescriptor", [], 16, "missingEntryPoint"),
            ("BATestBadIdentifiers", [], 10, "ok"),
            ("BATestFlood", [], 10, "ok"),
            ("BATestExit", [], 17, "protocolError"),
        ] as [(String, [String], Int32, String)])
    func exitCodePerVerdict(plugin: String, extra: [String], status: Int32, verdict: String) async throws {
        let output = try await run([BuildProducts.library(plugin), "--event", "install", "--json"] + extra)
        #expect(output.status == status, "\(output.stdout)\(output.stderr)")
        #expect(try json(output)["verdict"] as? String == verdict)
    }

    @Test func notALibraryAndMissingFiles() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let fake = try directory.write("libFake.so", "not a library")
        let notLibrary = try await run([fake, "--event", "install"])
        #expect(notLibrary.status == 15)
        #expect(notLibrary.stdout.contains("notALibrary"))
        let missing = try await run(["/nonexistent/lib.so", "--event", "install"])
        #expect(missing.status == 66)
        #expect(missing.stderr.contains("no such extension library"))
        let usage = try await run([BuildProducts.library("SampleCExtension"), "--event", "finished"])
        #expect(usage.status == 64)
        #expect(usage.stderr.contains("--download-json"))
    }

    @Test func finishedAndFailedEntryPoints() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let group = "group.com.example.ba.sample"
        let container = directory.path + "/groups/" + group
        try FileManager.default.createDirectory(atPath: container, withIntermediateDirectories: true)
        let catalog =
            #"{"title": "Sample catalog", "assets": [{"identifier": "level-2", "url": "levels/level-2.pak", "#
            + #""fileSize": 4194304, "priority": 10}]}"#
        let download =
            #"{"identifier": "catalog", "url": "https://cdn.example.com/sample/catalog.json", "fileSize": 2, "applicationGroupIdentifier": "group.com.example.ba.sample"}"#
        for library in ["SampleCExtension", "SampleSwiftExtension"] {
            let file = try directory.write("catalog-\(library).json", catalog)
            let finished = try await run([
                BuildProducts.library(library), "--event", "finished", "--download-json", download, "--file", file,
                "--app-group-container", container, "--json",
            ])
            #expect(finished.status == 0, "\(finished.stdout)")
            #expect(finished.stdout.contains("finished catalog at \(file)"))
            // Moved into the container's Assets/ (replacing the previous library's copy).
            #expect(!FileManager.default.fileExists(atPath: file), "\(library)")
            #expect(try String(contentsOfFile: container + "/Assets/catalog", encoding: .utf8) == catalog, "\(library)")
            #expect(finished.stdout.contains("scheduled 1 assets from the catalog"), "\(finished.stdout)")
            let scheduled = try #require(try json(finished)["scheduled"] as? [[String: Any]], "\(finished.stdout)")
            #expect(scheduled.map { $0["url"] as? String } == ["https://cdn.example.com/sample/levels/level-2.pak"])
            #expect(scheduled.first?["essential"] as? Bool == false)
            #expect(scheduled.first?["priority"] as? Int == 10)

            let failed = try await run([
                BuildProducts.library(library), "--event", "failed", "--download-json", download, "--error-message",
                "server said 503", "--json",
            ])
            #expect(failed.status == 0, "\(failed.stdout)")
            #expect(failed.stdout.contains("failed catalog: server said 503 (code 102)"))
            #expect((try json(failed)["scheduled"] as? [Any])?.isEmpty == true, "not essential: not re-queued")

            let essential = download.replacingOccurrences(
                of: #""fileSize": 2"#, with: #""fileSize": 2, "essential": true"#)
            let requeued = try await run([
                BuildProducts.library(library), "--event", "failed", "--download-json", essential, "--json",
            ])
            #expect(requeued.status == 0, "\(requeued.stdout)")
            #expect(requeued.stdout.contains("re-queued catalog as a non-essential download"), "\(requeued.stdout)")
            let copy = try #require((try json(requeued)["scheduled"] as? [[String: Any]])?.first, "\(requeued.stdout)")
            #expect(copy["identifier"] as? String == "catalog")
            #expect(copy["essential"] as? Bool == false)
            #expect(copy["fileSize"] as? Int == 2)
        }
    }

    @Test func terminateCallsExtensionWillTerminate() async throws {
        for library in ["SampleCExtension", "SampleSwiftExtension"] {
            let output = try await run([BuildProducts.library(library), "--event", "terminate"])
            #expect(output.status == 0, "\(output.stdout)")
            #expect(output.stdout.contains("terminating"), "\(library): \(output.stdout)")
        }
        let missing = try await run([BuildProducts.library("BATestHostAPI"), "--event", "terminate"])
        #expect(missing.status == 16, "BATestHostAPI does not implement extension_will_terminate")
    }

    @Test func helpHasAnExample() async throws {
        let help = try await runProcess(ba, ["run-extension", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("Examples:"))
    }

    // MARK: - Apple's app group container lookup

    /// An app directory as `ba install` takes it: Info.plist naming `group`, and a copy of the
    /// Apple-sample extension in `lib/`.
    func appDirectory(in directory: TemporaryDirectory, group: String) throws -> (app: String, library: String) {
        let app = directory.path + "/App"
        try FileManager.default.createDirectory(atPath: app + "/lib", withIntermediateDirectories: true)
        let info: [String: Any] = [
            "CFBundleIdentifier": "com.example.applesample", "CFBundleShortVersionString": "1.0",
            "BAAppGroupID": group, "BAExtensionPath": "lib/libBATestAppleSample.so",
        ]
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: app + "/Info.plist"))
        let library = app + "/lib/libBATestAppleSample.so"
        try FileManager.default.copyItem(atPath: BuildProducts.library("BATestAppleSample"), toPath: library)
        return (app, library)
    }

    @Test(
        "Apple's force-unwrapped containerURL(forSecurityApplicationGroupIdentifier:) finds a container named for the group: --app-group, --app, the app holding the library"
    )
    func appleContainerLookupFindsTheGroupsContainer() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let group = "group.com.example.applesample"
        let (app, copy) = try appDirectory(in: directory, group: group)
        let library = BuildProducts.library("BATestAppleSample")
        // The download names no group: it is the app's, as in basd.
        let download = #"{"identifier": "catalog", "url": "https://cdn.example.com/catalog.json"}"#
        let finished = ["--event", "finished", "--download-json", download, "--verbose"]

        // No group known: the container is no group's, the lookup gives nil, the force-unwrap
        // crashes, and ba says what to give.
        let bare = try await run([library] + finished)
        #expect(bare.status == 13, "\(bare.stdout)\(bare.stderr)")
        #expect(bare.stderr.contains("give --app-group GROUP or --app APP_DIR"), "\(bare.stderr)")

        for (name, arguments) in [
            ("--app-group", [library, "--app-group", group]),
            ("--app", ["--app", app]),
            ("--app with a library", [library, "--app", app]),
            ("the app directory holding the library", [copy]),
        ] {
            let output = try await run(arguments + finished)
            #expect(output.status == 0, "\(name): \(output.stdout)\(output.stderr)")
            // Apple's code reached the container (the move itself is the next test's business).
            #expect(output.stdout.contains("/groups/\(group)/catalog"), "\(name): \(output.stdout)")
            #expect(!output.stderr.contains("--app-group"), "\(name): \(output.stderr)")
        }

        // A download of another group does not get this group's container.
        let other =
            #"{"identifier": "c", "url": "https://cdn.example.com/c", "applicationGroupIdentifier": "group.other"}"#
        let wrongGroup = try await run([library, "--app-group", group, "--event", "finished", "--download-json", other])
        #expect(wrongGroup.status == 13, "\(wrongGroup.stdout)")
    }

    @Test("--app-group-container named for another group, or --app-group with --app, are refused with the fix")
    func containerNamedForAnotherGroupIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let library = BuildProducts.library("BATestAppleSample")
        let (app, _) = try appDirectory(in: directory, group: "group.a")
        let mismatch = try await run([
            library, "--event", "install", "--app-group", "group.a", "--app-group-container", directory.path + "/b",
        ])
        #expect(mismatch.status == 66, "\(mismatch.stderr)")
        #expect(mismatch.stderr.contains("is not named for the app group group.a"), "\(mismatch.stderr)")
        let both = try await run([library, "--event", "install", "--app-group", "group.a", "--app", app])
        #expect(both.status == 64, "\(both.stderr)")
        #expect(both.stderr.contains("not both"), "\(both.stderr)")
        let badGroup = try await run([library, "--event", "install", "--app-group", "../x"])
        #expect(badGroup.status == 64, "\(badGroup.stderr)")
        let noLibrary = try await run(["--event", "install"])
        #expect(noLibrary.status == 64, "\(noLibrary.stderr)")
        #expect(noLibrary.stderr.contains("--app APP_DIR"), "\(noLibrary.stderr)")
    }

    @Test(
        "Apple's import os Logger lines in an extension reach the host's log with their level, private values redacted")
    func appleLoggerLinesReachTheHostLog() async throws {
        let download = #"{"identifier": "catalog", "url": "https://cdn.example.com/catalog.json"}"#
        let output = try await run([
            BuildProducts.library("BATestAppleSample"), "--event", "finished", "--download-json", download,
            "--app-group", "group.com.example.applesample", "--json",
        ])
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        let logs = try #require(try json(output)["logs"] as? [[String: Any]], "\(output.stdout)")
        let lines = logs.map { ($0["level"] as? Int ?? -1, $0["message"] as? String ?? "") }
        let label = "com.example.apple-samplecode.BackgroundDownloadHandler[extension]: "
        // BAHostLogLevel: info 1, error 3.
        #expect(lines.contains { $0.0 == 1 && $0.1.hasPrefix(label + "moving catalog to /") }, "\(lines)")
        #expect(lines.contains { $0 == (3, label + "Failed to move downloaded file: <private>") }, "\(lines)")
        // Not also on the extension's stderr.
        #expect(!(try json(output)["output"] as? String ?? "").contains("Failed to move"), "\(output.stdout)")
        // replaceItemAt failed, so the file is still there: ba says so.
        #expect(output.stderr.contains("the extension did not move the finished file"), "\(output.stderr)")
    }

    @Test("what an extension prints reaches the call's output though the runner ends with _exit")
    func printedLinesReachTheOutput() async throws {
        let output = try await run([BuildProducts.library("BATestAppleSample"), "--event", "install", "--json"])
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        #expect(
            (try json(output)["output"] as? String ?? "").contains("downloads(for:) was called"), "\(output.stdout)")
    }
}
