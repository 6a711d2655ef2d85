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

/// `ba downloads`' filters (`--app`, `--state`, `--limit`) and a long listing read from the store
/// page by page, through real basd and `ba` processes. The rows are written into the state file
/// while basd is stopped (one group-committed batch), then a new basd lists them.
@Suite("ba downloads: filters, limit, long listings")
struct DownloadListingTests {
    static let ba = BuildProducts.executable("ba")
    static let first = "com.example.alpha"
    static let second = "com.example.beta"

    /// What a test puts in the store: per app, its ended downloads in scheduling order.
    struct Rows {
        var finished: Int = 0
        var failed: Int = 0
    }

    /// A basd whose store holds, for each app, `finished` then `failed` downloads (identifiers
    /// `f-00000`…, `x-00000`…, scheduled in that order at one instant, so the listing order of
    /// each app is the insertion order); `active` returns active downloads to schedule after
    /// basd started (through the protocol). Returns basd and every stored unique identifier in
    /// listing order (by app, then scheduling order).
    static func daemon(
        _ rows: [(app: String, rows: Rows)]
    ) async throws -> (daemon: DaemonProcess, order: [String]) {
        let directory = try TemporaryDirectory()
        let setup = try await DaemonProcess.start(directory: directory)
        let cli = try setup.cliClient()
        for (app, _) in rows {
            try cli.call(
                .registerApp(
                    AppRegistration(
                        bundleIdentifier: app, version: "1.0", appGroupIdentifier: "group." + app,
                        appDirectory: directory.path, extensionPath: nil)))
        }
        cli.close()
        setup.send(SIGTERM)
        guard setup.waitForExit(timeout: 20) != nil else { throw HarnessError("basd did not stop") }

        // One instant for every row: ties in `created_at` are ordered by insertion.
        let instant = Date()
        let store = try BAStore.open(path: setup.stateDirectory + "/state.sqlite", clock: { instant })
        var order: [String] = []
        try store.batch("writing the test's downloads") {
            for (app, counts) in rows.sorted(by: { $0.app < $1.app }) {
                for (prefix, count) in [("f", counts.finished), ("x", counts.failed)] {
                    for index in 0..<count {
                        let download = try store.schedule(
                            StoredDownload(
                                appIdentifier: app, identifier: String(format: "%@-%05d", prefix, index),
                                url: "http://127.0.0.1:9/\(prefix)/\(index)", expectedSize: 1))
                        if prefix == "f" {
                            try store.markFinished(
                                uniqueIdentifier: download.uniqueIdentifier, destination: "/nonexistent", size: 1)
                        } else {
                            try store.markFailed(
                                uniqueIdentifier: download.uniqueIdentifier,
                                error: .init(domain: "test", code: -1, message: "failed for the test"))
                        }
                        order.append(download.uniqueIdentifier)
                    }
                }
            }
        }
        try store.close()
        return (try await DaemonProcess.start(directory: directory), order)
    }

    /// `ba downloads ARGS --json`: its rows and `notShown`.
    static func list(
        _ daemon: DaemonProcess, _ arguments: [String]
    ) async throws -> (
        rows: [[String: Any]], notShown: Int
    ) {
        let output = try await runProcess(ba, ["downloads", "--json"] + arguments + ["--socket", daemon.socketPath])
        guard output.status == 0,
            let object = (try? JSONSerialization.jsonObject(with: Data(output.stdout.utf8))) as? [String: Any],
            let rows = object["downloads"] as? [[String: Any]], let notShown = object["notShown"] as? Int
        else {
            throw HarnessError(
                "ba downloads \(arguments): \(output.status) \(output.stdout)\(output.stderr)\nbasd: \(daemon.standardError)"
            )
        }
        return (rows, notShown)
    }

    static func states(_ rows: [[String: Any]]) -> [String] { rows.map { $0["state"] as? String ?? "?" } }
    static func apps(_ rows: [[String: Any]]) -> Set<String> { Set(rows.map { $0["appIdentifier"] as? String ?? "?" }) }

    @Test("--app and --state (repeated or a comma list, `active`) list exactly the matching downloads, by app")
    func filters() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        server.setFile("/stalled.bin", contents: [UInt8](repeating: 7, count: 1 << 20))
        server.setBehavior(.stall(afterBytes: 1000), for: "/stalled.bin")
        let (daemon, order) = try await Self.daemon([
            (Self.first, Rows(finished: 5, failed: 3)), (Self.second, Rows(finished: 4, failed: 0)),
        ])
        defer { daemon.kill() }
        // Two active downloads of the first app, held by a stalled server.
        let client = try daemon.appClient(Self.first)
        defer { client.close() }
        for name in ["a-0", "a-1"] {
            try client.call(.schedule(DownloadDescription(identifier: name, url: server.url("/stalled.bin"))))
        }

        let all = try await Self.list(daemon, [])
        #expect(all.rows.count == 14 && all.notShown == 0)
        // By app, then oldest first: the first app's stored rows, its two active ones, then the second app's.
        let expected = Array(order[0..<8]) + ["a-0", "a-1"] + Array(order[8...])
        let listed = all.rows.map {
            ($0["identifier"] as? String).flatMap { $0.hasPrefix("a-") ? $0 : nil }
                ?? ($0["uniqueIdentifier"] as? String ?? "?")
        }
        #expect(listed == expected)

        let second = try await Self.list(daemon, ["--app", Self.second])
        #expect(second.rows.count == 4 && Self.apps(second.rows) == [Self.second])

        let finished = try await Self.list(daemon, ["--state", "finished"])
        #expect(finished.rows.count == 9 && Set(Self.states(finished.rows)) == ["finished"])

        let ended = try await Self.list(daemon, ["--app", Self.first, "--state", "failed,finished"])
        #expect(ended.rows.count == 8 && Self.apps(ended.rows) == [Self.first])
        #expect(
            Self.states(ended.rows) == Array(repeating: "finished", count: 5) + Array(repeating: "failed", count: 3))
        let repeated = try await Self.list(daemon, ["--app", Self.first, "--state", "failed", "--state", "finished"])
        #expect(
            repeated.rows.map { $0["uniqueIdentifier"] as? String }
                == ended.rows.map { $0["uniqueIdentifier"] as? String })

        let active = try await Self.list(daemon, ["--state", "active"])
        #expect(active.rows.map { $0["identifier"] as? String } == ["a-0", "a-1"])
        #expect(Set(Self.states(active.rows)).isSubset(of: ["created", "waiting", "downloading"]))

        let none = try await runProcess(
            Self.ba, ["downloads", "--app", Self.second, "--state", "failed", "--socket", daemon.socketPath])
        #expect(
            none.status == 0 && none.stdout == "no downloads for \(Self.second) in state failed\n", "\(none.stdout)")
    }

    @Test("an unknown state is refused, naming the states; by ba before it connects, and by basd (1006)")
    func unknownState() async throws {
        let (daemon, _) = try await Self.daemon([(Self.first, Rows(finished: 1))])
        defer { daemon.kill() }
        let output = try await runProcess(
            Self.ba, ["downloads", "--state", "finished,paused", "--socket", daemon.socketPath])
        #expect(output.status == 64, "\(output.stdout)\(output.stderr)")
        #expect(output.stderr.contains("unknown download state \"paused\""), "\(output.stderr)")
        #expect(
            output.stderr.contains("the states are created, waiting, downloading, finished, failed, active"),
            "\(output.stderr)")

        let cli = try daemon.cliClient()
        defer { cli.close() }
        func refusal(_ request: Request) -> (code: Int, message: String)? {
            do {
                _ = try cli.call(request)
                return nil
            } catch {
                return (error.code, error.message)
            }
        }
        let state = refusal(.listDownloads(states: ["running"], limit: 10))
        #expect(state?.code == DaemonErrorCode.invalidRequest.rawValue)
        #expect(state?.message.contains("unknown download state \"running\"; the states are created") == true)
        #expect(refusal(.listDownloads(limit: -1))?.code == DaemonErrorCode.invalidRequest.rawValue)
        // The connection stays usable after a refusal.
        guard case .downloadList(let listing) = try cli.call(.listDownloads(states: ["finished"], limit: 10)) else {
            throw HarnessError("no downloadList")
        }
        #expect(listing.downloads.count == 1 && listing.notShown == 0)
    }

    @Test("--limit shows the first N and says how many more matched; --limit 0 shows all")
    func limit() async throws {
        let (daemon, order) = try await Self.daemon([(Self.first, Rows(finished: 20, failed: 5))])
        defer { daemon.kill() }
        let table = try await runProcess(Self.ba, ["downloads", "--limit", "10", "--socket", daemon.socketPath])
        #expect(table.status == 0, "\(table.stderr)")
        let lines = table.stdout.split(separator: "\n")
        #expect(lines.count == 12, "\(table.stdout)")  // header, 10 rows, the line
        #expect(lines.last == "15 more not shown; use --limit 0 for all", "\(table.stdout)")

        let cut = try await Self.list(daemon, ["--limit", "10"])
        #expect(cut.rows.map { $0["uniqueIdentifier"] as? String } == order.prefix(10).map { $0 })
        #expect(cut.notShown == 15)
        let failed = try await Self.list(daemon, ["--state", "failed", "--limit", "2"])
        #expect(failed.rows.count == 2 && failed.notShown == 3 && Set(Self.states(failed.rows)) == ["failed"])
        let exact = try await Self.list(daemon, ["--limit", "25"])
        #expect(exact.rows.count == 25 && exact.notShown == 0)
        let all = try await Self.list(daemon, ["--limit", "0"])
        #expect(all.rows.count == 25 && all.notShown == 0)

        let whole = try await runProcess(Self.ba, ["downloads", "--limit", "0", "--socket", daemon.socketPath])
        #expect(whole.stdout.split(separator: "\n").count == 26 && !whole.stdout.contains("more not shown"))
        let negative = try await runProcess(Self.ba, ["downloads", "--limit", "-1", "--socket", daemon.socketPath])
        #expect(negative.status == 64 && negative.stderr.contains("--limit"), "\(negative.stderr)")
    }

    @Test("a listing of 5,000 downloads across pages arrives complete and in order, limited or not")
    func longListing() async throws {
        let (daemon, order) = try await Self.daemon([
            (Self.first, Rows(finished: 2_500, failed: 500)), (Self.second, Rows(finished: 2_000)),
        ])
        defer { daemon.kill() }
        let all = try await Self.list(daemon, ["--limit", "0"])
        #expect(all.notShown == 0)
        #expect(all.rows.count == 5_000)
        #expect(all.rows.map { $0["uniqueIdentifier"] as? String ?? "?" } == order)

        // A limit that ends inside a page, after the first app's rows.
        let cut = try await Self.list(daemon, ["--limit", "4321"])
        #expect(cut.rows.map { $0["uniqueIdentifier"] as? String ?? "?" } == Array(order.prefix(4_321)))
        #expect(cut.notShown == 679)

        // The request of older clients (no limit): every row, as `downloads`.
        let cli = try daemon.cliClient()
        defer { cli.close() }
        guard case .downloads(let infos) = try cli.call(.listDownloads(app: nil)) else {
            throw HarnessError("listDownloads without a limit did not answer downloads")
        }
        #expect(infos.map(\.uniqueIdentifier) == order)
        guard case .downloads(let second) = try cli.call(.listDownloads(app: Self.second, states: ["finished"])) else {
            throw HarnessError("no downloads")
        }
        #expect(second.map(\.uniqueIdentifier) == Array(order.suffix(2_000)))
    }
}
