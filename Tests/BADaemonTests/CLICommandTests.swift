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

/// `ba status`, `downloads`, `promote`, `cancel`, `events --follow` and `lock status` as real
/// processes against a real basd (docs/cli.md).
@Suite("ba commands against basd", .timeLimit(.minutes(2)))
struct CLICommandTests {
    static let app = "com.example.cli"
    static let group = "group.com.example.cli"
    let ba = BuildProducts.executable("ba")

    static func register(_ daemon: DaemonProcess, app: String = app, group: String = group) throws {
        try daemon.register(app, group: group)
    }

    static func json(_ text: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
    }

    /// `ba downloads --json`'s rows.
    func downloads(_ daemon: DaemonProcess) async throws -> [[String: Any]] {
        let output = try await runProcess(ba, ["downloads", "--json", "--socket", daemon.socketPath])
        guard output.status == 0, let rows = Self.json(output.stdout)?["downloads"] as? [[String: Any]] else {
            throw HarnessError("ba downloads --json: \(output.status) \(output.stdout)\(output.stderr)")
        }
        return rows
    }

    @Test("with basd down: exit 30 and one line naming the socket and how to start basd")
    func basdNotRunning() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let socket = directory.path + "/basd.sock"
        let status = try await runProcess(ba, ["status", "--socket", socket])
        #expect(status.status == 30)
        #expect(status.stdout.isEmpty)
        let lines = status.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(status.stderr)")
        #expect(status.stderr.contains(socket) && status.stderr.contains("start it with `basd`"), "\(status.stderr)")

        // BA_SOCKET is the default; --json still prints an object.
        let json = try await runProcess(ba, ["status", "--json"], environment: ["BA_SOCKET": socket])
        #expect(json.status == 30)
        let object = try #require(Self.json(json.stdout), "\(json.stdout)")
        #expect(object["running"] as? Bool == false)
        #expect(object["socket"] as? String == socket)

        for arguments in [
            ["downloads"], ["promote", "x"], ["cancel", "x"], ["events", "--follow"], ["lock", "status", "--app", "a"],
        ] {
            let output = try await runProcess(ba, arguments + ["--socket", socket])
            #expect(output.status == 30, "\(arguments): \(output.stderr)")
            #expect(output.stderr.contains(socket))
        }
    }

    @Test("usage errors exit 64; every command's help has an example")
    func usage() async throws {
        let events = try await runProcess(ba, ["events"])
        #expect(events.status == 64)
        #expect(events.stderr.contains("--follow"))
        #expect(try await runProcess(ba, ["lock", "status"]).status == 64)
        #expect(try await runProcess(ba, ["promote"]).status == 64)
        for command in [
            ["status"], ["downloads"], ["promote"], ["cancel"], ["events"], ["lock", "status"], ["install"], ["update"],
            ["simulate"], ["apps"], ["purge"],
        ] {
            let help = try await runProcess(ba, command + ["--help"])
            #expect(help.status == 0)
            #expect(help.stdout.contains("Examples:") && help.stdout.contains("--socket"), "\(command)")
        }
        // Commands that do not talk to basd: an example, no --socket.
        for command in [["service"], ["service", "install"], ["service", "uninstall"], ["service", "status"]] {
            let help = try await runProcess(ba, command + ["--help"])
            #expect(help.status == 0)
            #expect(help.stdout.contains("Examples:"), "\(command)")
        }
    }

    @Test("status: version, pid, connections, apps and active downloads of the running basd")
    func status() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let first = try await runProcess(ba, ["status", "--json", "--socket", daemon.socketPath])
        #expect(first.status == 0, "\(first.stderr)")
        let object = try #require(Self.json(first.stdout))
        #expect(object["running"] as? Bool == true)
        #expect(object["pid"] as? Int == Int(daemon.pid))
        #expect(object["registeredApps"] as? Int == 0)
        #expect(object["activeDownloads"] as? Int == 0)
        #expect(object["connections"] as? Int == 1)
        #expect((object["daemonVersion"] as? String)?.isEmpty == false)

        try Self.register(daemon)
        let human = try await runProcess(ba, ["status"], environment: ["BA_SOCKET": daemon.socketPath])
        #expect(human.status == 0)
        #expect(human.stdout.contains("is running (pid \(daemon.pid))"), "\(human.stdout)")
        #expect(human.stdout.contains("1 registered"))
    }

    @Test("downloads, promote, cancel and events --follow while one download finishes and one stalls")
    func downloadsAndEvents() async throws {
        let server = try await AssetServer.start()
        let small = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        server.setFile("/small.bin", contents: small)
        server.setFile("/slow.bin", contents: [UInt8](repeating: 7, count: 200_000))
        server.setBehavior(.stall(afterBytes: 1000), for: "/slow.bin")
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try Self.register(daemon)
        try Self.register(daemon, app: "com.example.other", group: "group.com.example.other")

        let events = try ChildProcess(
            BuildProducts.executable("ba"), ["events", "--follow", "--json", "--socket", daemon.socketPath])
        defer { events.kill() }
        let others = try ChildProcess(
            BuildProducts.executable("ba"),
            ["events", "--follow", "--app", "com.example.other", "--socket", daemon.socketPath])
        defer { others.kill() }
        for process in [events, others] {
            try process.wait("subscribed") { $0.stderr.contains("following events from basd at \(daemon.socketPath)") }
        }

        let client = try daemon.appClient(Self.app)
        defer { client.close() }
        try client.call(
            .schedule(
                DownloadDescription(
                    identifier: "small", url: server.url("/small.bin"), priority: 10, fileSize: Int64(small.count))))
        let reply = try client.call(
            .schedule(DownloadDescription(identifier: "slow", url: server.url("/slow.bin"), fileSize: 200_000)))
        guard case .downloads(let scheduled) = reply, let slow = scheduled.first?.uniqueIdentifier else {
            throw HarnessError("schedule answered \(reply)")
        }

        // One JSON object per event, every app's, with the app, the time and the store's kinds.
        try events.wait("small finished and slow began") { process in
            let lines = process.jsonLines
            return lines.contains { $0["identifier"] as? String == "small" && $0["kind"] as? String == "finished" }
                && lines.contains { $0["identifier"] as? String == "slow" && $0["kind"] as? String == "began" }
        }
        for line in events.jsonLines {
            #expect(line["appIdentifier"] as? String == Self.app)
            #expect((line["time"] as? String)?.isEmpty == false)
            #expect(line["downloadUniqueIdentifier"] is String && line["sequence"] is Int)
        }

        // The table and the JSON rows: app, state names, bytes, priority, attempts.
        var rows = try await downloads(daemon)
        #expect(rows.count == 2)
        let smallRow = try #require(rows.first { $0["identifier"] as? String == "small" })
        #expect(smallRow["appIdentifier"] as? String == Self.app)
        #expect(smallRow["state"] as? String == "finished")
        #expect(smallRow["bytesOnDisk"] as? Int == small.count && smallRow["fileSize"] as? Int == small.count)
        #expect(smallRow["priority"] as? Int == 10 && smallRow["essential"] as? Bool == false)
        #expect((smallRow["attempts"] as? Int ?? 0) >= 1)
        let slowRow = try #require(rows.first { $0["identifier"] as? String == "slow" })
        #expect(slowRow["uniqueIdentifier"] as? String == slow)
        #expect(slowRow["state"] as? String == "downloading" || slowRow["state"] as? String == "waiting")
        #expect(slowRow["foreground"] as? Bool == false)
        let table = try await runProcess(ba, ["downloads", "--app", Self.app, "--socket", daemon.socketPath])
        #expect(table.status == 0)
        let tableLines = table.stdout.split(separator: "\n")
        #expect(tableLines.first?.hasPrefix("APP") == true && tableLines.count == 3, "\(table.stdout)")
        #expect(tableLines.contains { $0.contains("slow") && $0.contains(String(slow.prefix(8))) })
        let none = try await runProcess(ba, ["downloads", "--app", "com.example.other", "--socket", daemon.socketPath])
        #expect(none.stdout == "no downloads for com.example.other\n")

        // Promote by a prefix, as the table prints it: the download moves to the foreground.
        let promote = try await runProcess(ba, ["promote", String(slow.prefix(8)), "--socket", daemon.socketPath])
        #expect(promote.status == 0, "\(promote.stderr)")
        #expect(promote.stdout.contains(slow))
        try events.wait("slow began in the foreground") { process in
            process.jsonLines.contains {
                $0["identifier"] as? String == "slow" && $0["kind"] as? String == "began"
                    && $0["isForeground"] as? Bool == true
            }
        }
        rows = try await downloads(daemon)
        #expect(rows.first { $0["identifier"] as? String == "slow" }?["foreground"] as? Bool == true)

        // Cancel; then it is not active, and both commands say so with exit 32.
        let cancel = try await runProcess(ba, ["cancel", slow, "--socket", daemon.socketPath])
        #expect(cancel.status == 0, "\(cancel.stderr)")
        for command in ["cancel", "promote"] {
            let again = try await runProcess(ba, [command, slow, "--socket", daemon.socketPath])
            #expect(again.status == 32, "\(command): \(again.stderr)")
            #expect(again.stderr.contains("no active download has unique identifier \(slow)"))
            let unknown = try await runProcess(ba, [command, "no-such-download", "--socket", daemon.socketPath])
            #expect(unknown.status == 32, "\(command): \(unknown.stderr)")
        }
        let status = try await runProcess(ba, ["status", "--json", "--socket", daemon.socketPath])
        #expect(Self.json(status.stdout)?["activeDownloads"] as? Int == 0)

        // SIGINT and SIGTERM end following with exit 0; --app kept the other app's view empty.
        events.signal(SIGINT)
        #expect(events.waitForExit() == 0, "\(events.stderr)")
        others.signal(SIGTERM)
        #expect(others.waitForExit() == 0, "\(others.stderr)")
        #expect(others.stdout.isEmpty, "\(others.stdout)")
        try await server.shutdown()
    }

    @Test("downloads: a running transfer's bytes as the engine reports them, ahead of the once-a-second record")
    func downloadsShowLiveBytes() async throws {
        let server = try await AssetServer.start()
        server.setFile("/slow.bin", contents: [UInt8](repeating: 3, count: 4 << 20))
        // 3 MiB at once, then nothing: the engine has reported them, while the store recorded
        // progress at most once a second (a trickle made this a race on a loaded machine).
        server.setBehavior(.stall(afterBytes: 3 << 20), for: "/slow.bin")
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try Self.register(daemon)
        let client = try daemon.appClient(Self.app)
        defer { client.close() }
        let reply = try client.call(
            .schedule(DownloadDescription(identifier: "slow", url: server.url("/slow.bin"), fileSize: 4 << 20)))
        guard case .downloads(let scheduled) = reply, let slow = scheduled.first?.uniqueIdentifier else {
            throw HarnessError("schedule answered \(reply)")
        }
        // The store, read as another process may (WAL): what basd recorded so far. `ba downloads`
        // is asked first, so it cannot be ahead of the store by luck, only by reporting live bytes.
        let store = try BAStore.open(path: daemon.stateDirectory + "/state.sqlite")
        defer { try? store.close() }
        _ = try await CLIQueries.poll(
            "ba downloads ahead of the stored progress", daemon, timeout: 30,
            read: { () async throws -> (listed: Int64, stored: Int64) in
                let row = try await downloads(daemon).first { $0["uniqueIdentifier"] as? String == slow }
                let listed = Int64(row?["bytesOnDisk"] as? Int ?? 0)
                return (listed, try store.download(uniqueIdentifier: slow)?.bytesOnDisk ?? 0)
            },
            until: { $0.listed > $0.stored })
        try await server.shutdown()
    }

    @Test("events --follow --no-reconnect: human lines, and exit 31 when basd goes away")
    func eventsWhenBasdStops() async throws {
        let server = try await AssetServer.start()
        server.setFile("/a.bin", contents: [UInt8](repeating: 1, count: 5000))
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try Self.register(daemon)
        let events = try ChildProcess(
            BuildProducts.executable("ba"),
            [
                "events", "--follow", "--no-progress", "--no-reconnect", "--socket", daemon.socketPath,
            ])
        defer { events.kill() }
        try events.wait("subscribed") { $0.stderr.contains("following events") }
        let client = try daemon.appClient(Self.app)
        try client.call(.schedule(DownloadDescription(identifier: "a", url: server.url("/a.bin"), fileSize: 5000)))
        client.close()
        try events.wait("a finished") { $0.stdout.contains("  finished  ") }
        let lines = events.stdout.split(separator: "\n")
        #expect(lines.allSatisfy { $0.contains("  \(Self.app)  a  ") }, "\(events.stdout)")
        #expect(!lines.contains { $0.contains("  progress  ") })
        #expect(lines.contains { $0.contains("  began  ") && $0.contains("from the start, background") })

        daemon.send(SIGTERM)
        #expect(events.waitForExit() == 31)
        #expect(events.stderr.contains("stopped following"), "\(events.stderr)")
        try await server.shutdown()
    }

    @Test("lock status: unknown app refused (33); a held lock names its holder's pid")
    func lockStatus() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let unknown = try await runProcess(
            ba, ["lock", "status", "--app", "com.example.nobody", "--socket", daemon.socketPath])
        #expect(unknown.status == 33)
        #expect(unknown.stderr.contains("not registered"), "\(unknown.stderr)")

        try Self.register(daemon)
        let free = try await runProcess(
            ba, ["lock", "status", "--app", Self.app, "--json", "--socket", daemon.socketPath])
        #expect(free.status == 0, "\(free.stderr)")
        let info = try #require(Self.json(free.stdout))
        #expect(info["held"] as? Bool == false && info["holderPID"] == nil)
        #expect(info["appIdentifier"] as? String == Self.app && info["appGroupIdentifier"] as? String == Self.group)
        let path = try #require(info["lockPath"] as? String)

        let holder = try LockHoldingProcess(path: path)
        defer { holder.release() }
        var held: [String: Any] = [:]
        let deadline = Date(timeIntervalSinceNow: 20)
        repeat {
            let output = try await runProcess(
                ba, ["lock", "status", "--app", Self.app, "--json", "--socket", daemon.socketPath])
            held = Self.json(output.stdout) ?? [:]
            if held["held"] as? Bool == true { break }
        } while Date() < deadline
        #expect(held["held"] as? Bool == true)
        #expect(held["holderPID"] as? Int == Int(holder.pid))
        let human = try await runProcess(ba, ["lock", "status", "--app", Self.app, "--socket", daemon.socketPath])
        #expect(human.stdout.contains("held by pid \(holder.pid)"), "\(human.stdout)")
        #expect(human.stdout.contains(path))
    }
}
