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

/// Regressions of defects that lived in basd's core before its rebuild: events stranded after an
/// app exits, a FIFO freezing basd, a full disk leaving a download stuck, a complete file fetched
/// again after a crash, identifiers that alias folders. Each runs a real basd.
@Suite("basd core defects", .timeLimit(.minutes(3)))
struct CoreDefectTests {
    static let app = DownloadServiceTests.app
    static let group = DownloadServiceTests.group
    static let catalog = Array(#"{"title": "Sample catalog", "assets": []}"#.utf8)

    /// An app that connected, subscribed and quit: its extension gets the next finished download
    /// (the closed connection no longer counts as a listener).
    @Test("after an app subscribes and exits, a finished download wakes its extension", arguments: [false, true])
    func eventsAfterTheAppExits(withObserver: Bool) async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        server.setFile("/catalog.json", contents: Self.catalog)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try DownloadServiceTests.register(daemon, extensionPath: BuildProducts.library("SampleSwiftExtension"))

        // `ba events --follow`'s connection, following every event while all this happens.
        let observer =
            withObserver
            ? try daemon.cliClient() : nil
        defer { observer?.close() }
        try observer?.call(.subscribeEvents)

        // The app launches, subscribes, and quits.
        let launched = try DownloadServiceTests.appClient(daemon)
        try launched.call(.subscribeEvents)
        try launched.call(.status)
        launched.close()

        // Later (a periodic run, say) a download finishes with no app running.
        let client = try DownloadServiceTests.appClient(daemon)
        try client.call(.schedule(DownloadDescription(identifier: "catalog", url: server.url("/catalog.json"))))
        client.close()
        try await DownloadServiceTests.waitForFinishedRun(daemon)
        let kept = daemon.stateDirectory + "/groups/" + Self.group + "/Assets/catalog"
        #expect(FileManager.default.contents(atPath: kept) == Data(Self.catalog), "basd log: \(daemon.standardError)")
    }

    /// `Info.plist` as a FIFO: `ba install` is refused at once, naming what the file is, and basd
    /// keeps answering everyone.
    @Test("a FIFO as Info.plist is refused without blocking basd")
    func fifoInfoPlist() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let app = daemon.directory.path + "/fifo-app"
        try FileManager.default.createDirectory(atPath: app, withIntermediateDirectories: true)
        #expect(mkfifo(app + "/Info.plist", 0o600) == 0)
        // `timeout` ends a hang with 124, so a regression fails instead of hanging the suite.
        let ba = CLIQueries.ba
        async let install = runProcess("/usr/bin/timeout", ["20", ba, "install", app, "--socket", daemon.socketPath])
        let status = try await runProcess("/usr/bin/timeout", ["20", ba, "status", "--socket", daemon.socketPath])
        #expect(status.status == 0, "ba status: \(status.status) \(status.stderr)")
        let installed = try await install
        #expect(installed.status != 124, "ba install hung on the FIFO")
        #expect(installed.status == 33, "\(installed.status) \(installed.stdout)\(installed.stderr)")
        #expect(installed.stderr.contains("FIFO"), "\(installed.stderr)")
        let again = try await runProcess("/usr/bin/timeout", ["20", ba, "status", "--socket", daemon.socketPath])
        #expect(again.status == 0, "basd stopped answering: \(again.stderr)\n\(daemon.standardError)")
    }

    /// A file complete at its destination when basd starts (it died between the rename and the
    /// record) is recorded finished, without a request; one that is not complete is fetched.
    @Test("a file already complete at its destination after a crash is not fetched again")
    func completeFileAfterACrash() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let complete = SampleAppFixture.bytes(50_000, seed: 3)
        let torn = SampleAppFixture.bytes(40_000, seed: 4)
        server.setFile("/complete.bin", contents: complete)
        server.setFile("/torn.bin", contents: torn)
        let directory = try TemporaryDirectory()
        let first = try await DaemonProcess.start(directory: directory)
        try DownloadServiceTests.register(first)
        let stateDirectory = first.stateDirectory
        first.send(SIGKILL)
        #expect(first.waitForExit(timeout: 10) != nil)

        // What the dead basd left: two active downloads, one complete file renamed into place,
        // one destination holding fewer bytes than declared.
        let store = try BAStore.open(path: stateDirectory + "/state.sqlite")
        let downloads = [("complete", complete), ("torn", torn)].map { name, bytes in
            StoredDownload(
                appIdentifier: Self.app, identifier: name, url: server.url("/\(name).bin"),
                applicationGroupIdentifier: Self.group, expectedSize: Int64(bytes.count))
        }
        let folder = stateDirectory + "/transfers/" + Self.group + "/finished"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for download in downloads { try store.schedule(download) }
        try Data(complete).write(to: URL(fileURLWithPath: folder + "/\(downloads[0].uniqueIdentifier)-complete"))
        try Data(torn.prefix(100)).write(to: URL(fileURLWithPath: folder + "/\(downloads[1].uniqueIdentifier)-torn"))
        try store.close()

        let daemon = try await DaemonProcess.start(directory: directory)
        defer { daemon.kill() }
        let rows = try await CLIQueries.pollDownloads(
            "both downloads finished", daemon, app: Self.app, timeout: 30,
            until: { $0.count == 2 && $0.allSatisfy { $0["state"] as? String == "finished" } })
        #expect(rows.count == 2)
        #expect(server.requests(for: "/complete.bin").isEmpty, "the complete file was fetched again")
        #expect(server.requests(for: "/torn.bin").count == 1)
        let delivered = folder + "/\(downloads[1].uniqueIdentifier)-torn"
        #expect(FileManager.default.contents(atPath: delivered) == Data(torn))
        #expect(await daemon.logged("was already complete"), "\(daemon.standardError)")
    }

    /// `.`, `..`, empty and NUL identifiers, names that would alias basd's folders, and paths that
    /// are not absolute paths are refused over the protocol as in an Info.plist; a URL with a NUL
    /// is refused; control characters a client sends reach basd's log escaped.
    @Test("identifiers, paths and URLs that alias folders or hide bytes are refused everywhere")
    func identifiersAndPaths() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let cli = try daemon.cliClient()
        defer { cli.close() }
        let directory = daemon.directory.path
        func registration(
            _ bundle: String = "a", group: String = "g", directory: String = directory, library: String? = nil
        ) -> AppRegistration {
            AppRegistration(
                bundleIdentifier: bundle, version: "1", appGroupIdentifier: group, appDirectory: directory,
                extensionPath: library)
        }
        let refused: [(AppRegistration, String)] = [
            (registration("."), "'.'"),
            (registration(group: "."), "'.'"),
            (registration(group: ".."), ".."),
            (registration(group: ""), "empty"),
            (registration("a\u{0}b"), "NUL"),
            (registration(group: ".ba-partial"), "starts with '.'"),
            (registration(directory: ""), "empty"),
            (registration(directory: "../../etc"), "absolute"),
            (registration(directory: "/tmp/../etc"), ".."),
            (registration(library: "https://example.com/lib.so"), "absolute"),
        ]
        for (registration, why) in refused {
            do {
                try cli.call(.registerApp(registration))
                Issue.record("registered \(registration)")
            } catch {
                #expect(
                    error.code == 0 && error.message.contains(why), "\(registration): \(error.code) \(error.message)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: daemon.stateDirectory + "/groups/g"))

        // A URL with a NUL byte would be fetched cut short where C reads it.
        try DownloadServiceTests.register(daemon)
        let app = try DownloadServiceTests.appClient(daemon)
        defer { app.close() }
        do {
            let result = try app.call(
                .schedule(DownloadDescription(identifier: "x", url: "http://127.0.0.1:1/a\u{0}b")))
            Issue.record("scheduled a URL with a NUL: \(result)")
        } catch {
            #expect(error.code == 0 && error.message.contains("NUL"), "\(error.message)")
        }
    }

    /// A NUL inside `hello`'s bundle identifier was cut where SQLite read it and the rest
    /// accepted: the connection spoke as the registered app. Names that display as other names
    /// (a bidirectional override, white space at an end) were registered and listed.
    @Test("hello with a NUL or a bidirectional control in its bundle identifier, and such registrations, are refused")
    func spoofedBundleIdentifiers() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try DownloadServiceTests.register(daemon)
        for (bundle, why) in [
            (Self.app + "\u{0}evil", "NUL"), (Self.app + "\u{202E}", "U+202E"), (Self.app + " ", "white space"),
        ] {
            for role in [ClientInfo.Role.app, .extension] {
                do {
                    let client = try DaemonClient(
                        socketPath: daemon.socketPath,
                        client: ClientInfo(role: role, bundleIdentifier: bundle, pid: getpid()))
                    client.close()
                    Issue.record("hello as \(role) \(bundle.debugDescription) was accepted")
                } catch {
                    #expect(error.message.contains(why), "\(bundle.debugDescription): \(error.message)")
                    #expect(error.message.contains("bundle identifier"), "\(error.message)")
                }
            }
        }
        let cli = try daemon.cliClient()
        defer { cli.close() }
        for (bundle, group) in [("moc.elpmaxe\u{202E}", "g"), ("a", "group.\u{2066}b"), ("a ", "g"), ("a", " g")] {
            do {
                try daemon.register(bundle, version: "1", group: group)
                Issue.record("registered \(bundle.debugDescription) in \(group.debugDescription)")
            } catch {
                #expect(error.code == 0, "\(error.message)")
            }
        }
        guard case .apps(let apps) = try cli.call(.listApps) else { throw HarnessError("listApps not answered") }
        #expect(apps.map(\.bundleIdentifier) == [Self.app])
    }

    /// basd's log escapes control characters in what a client sent: here an unknown request
    /// type, which basd quotes when it closes the connection.
    @Test("control characters a client sends are escaped in basd's log")
    func logLinesAreEscaped() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let raw = try TestClient(socketPath: daemon.socketPath)
        let frame = Array(#"{"id":1,"type":"x\nbasd: forged line"}"#.utf8)
        var length = UInt32(frame.count).bigEndian
        let prefix = withUnsafeBytes(of: &length) { Array($0) }
        _ = raw.sendRaw(prefix + frame)
        _ = try? raw.receive()
        _ = try await CLIQueries.poll(
            "basd's log line about the bad frame", daemon, timeout: 10, read: { daemon.standardError },
            until: { $0.contains("bad input") })
        let lines = daemon.standardError.split(separator: "\n")
        #expect(!lines.contains { $0.hasPrefix("basd: forged line") }, "\(daemon.standardError)")
        #expect(await daemon.logged(#"x\nbasd: forged line"#), "\(daemon.standardError)")
    }

    /// A queued download holds no file descriptor: basd under `ulimit -n 128` finishes 300 of them
    /// (an engine that opened every partial file when the download was added ran out at ~100).
    @Test("basd finishes 300 queued downloads under ulimit -n 128")
    func queuedDownloadsHoldNoDescriptor() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let daemon = try await DaemonProcess.start(descriptorLimit: 128)
        defer { daemon.kill() }
        try DownloadServiceTests.register(daemon)
        let inbox = EventInbox()
        let app = try DownloadServiceTests.appClient(daemon, inbox: inbox)
        defer { app.close() }
        try app.call(.subscribeEvents)
        for index in 0..<300 {
            server.setFile("/q\(index).bin", contents: [UInt8](repeating: UInt8(index % 251), count: 2_000))
            try app.call(.schedule(DownloadDescription(identifier: "q\(index)", url: server.url("/q\(index).bin"))))
        }
        let events = try await inbox.wait(timeout: 60, "300 finished") { events in
            events.filter { $0.kind == .finished }.count + events.filter { $0.kind == .failed }.count >= 300
        }
        let failed = events.filter { $0.kind == .failed }
        #expect(
            failed.isEmpty, "\(failed.prefix(3).map { $0.errorMessage ?? "" })\n\(daemon.standardError.suffix(2000))")
    }

    /// Listings larger than a frame arrive in parts: 2 500 queued downloads through the app's
    /// `currentDownloads` and `ba downloads --json` (both failed from about 2 400 before).
    @Test("2 500 downloads are listed whole, to the app and to ba downloads")
    func listingsLargerThanAFrame() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        server.setFile("/slow.bin", contents: [UInt8](repeating: 1, count: 1_000))
        server.setBehavior(.stall(afterBytes: 0), for: "/slow.bin")
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try DownloadServiceTests.register(daemon)
        let app = try DownloadServiceTests.appClient(daemon)
        defer { app.close() }
        let count = 2_500
        // A long header, so the listing is well over the 1 MiB frame cap.
        let padding = String(repeating: "x", count: 600)
        for index in 0..<count {
            try app.call(
                .schedule(
                    DownloadDescription(
                        identifier: "d\(index)", url: server.url("/slow.bin"),
                        headers: [.init(name: "X-Padding", value: padding)])))
        }
        guard case .downloads(let current) = try app.call(.currentDownloads) else {
            Issue.record("currentDownloads did not answer with downloads")
            return
        }
        #expect(current.count == count)
        #expect(Set(current.map(\.download.identifier)).count == count)
        let rows = try await CLIQueries.downloadRows(daemon, app: DownloadServiceTests.app)
        #expect(rows.count == count)
        #expect(rows.allSatisfy { $0["state"] as? String != "failed" }, "\(rows.first ?? [:])")
    }

    /// An identifier of 1 000 bytes (the rules allow 1 024) still makes a file name the file
    /// system accepts: the download finishes.
    @Test("a download with a 1 000-byte identifier finishes")
    func longIdentifier() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        server.setFile("/long.bin", contents: [UInt8](repeating: 7, count: 5_000))
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try DownloadServiceTests.register(daemon)
        let inbox = EventInbox()
        let app = try DownloadServiceTests.appClient(daemon, inbox: inbox)
        defer { app.close() }
        try app.call(.subscribeEvents)
        let identifier = String(repeating: "é", count: 500)
        try app.call(.schedule(DownloadDescription(identifier: identifier, url: server.url("/long.bin"))))
        let events = try await inbox.wait(timeout: 30, "the end") {
            $0.contains { $0.kind == .finished || $0.kind == .failed }
        }
        let finished = try #require(events.first { $0.kind == .finished }, "\(events.map { $0.errorMessage ?? "" })")
        #expect(finished.identifier == identifier)
        #expect(FileManager.default.contents(atPath: finished.destination ?? "")?.count == 5_000)
    }
}
