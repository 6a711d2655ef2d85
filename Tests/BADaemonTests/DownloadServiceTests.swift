import BAAssetServer
import BACore
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Events pushed to a test client, collected so a test can wait for them (bounded, no sleeps).
final class EventInbox: @unchecked Sendable {
    private let condition = NSCondition()
    private var events: [DownloadEvent] = []

    func append(_ event: DownloadEvent) {
        condition.lock()
        events.append(event)
        condition.broadcast()
        condition.unlock()
    }

    var all: [DownloadEvent] { condition.withLock { events } }

    /// Waits until `predicate` holds for the events so far; throws after `timeout` seconds. The
    /// wait is on a thread of its own, not on the concurrency pool (``offThePool(_:)``).
    @discardableResult
    func wait(
        timeout: Double = 30, _ what: String, until predicate: @escaping ([DownloadEvent]) -> Bool
    ) async throws -> [DownloadEvent] {
        try await offThePool { try self.waitBlocking(timeout: timeout, what, until: predicate) }
    }

    /// ``wait(timeout:_:until:)`` on the calling thread.
    @discardableResult
    func waitBlocking(
        timeout: Double = 30, _ what: String, until predicate: ([DownloadEvent]) -> Bool
    ) throws -> [DownloadEvent] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !predicate(events) {
            guard condition.wait(until: deadline) else {
                throw HarnessError("timed out waiting for \(what); events: \(events.map { "\($0.kind)" })")
            }
        }
        return events
    }
}

/// basd serving downloads: a real basd process, the loopback asset server, `DaemonClient`s in the
/// roles of an app and of the CLI.
@Suite("basd download service")
struct DownloadServiceTests {
    static let app = "com.example.game"
    static let group = "group.com.example.game"

    /// Registers the test app (with an extension, if given) through a CLI connection.
    static func register(_ daemon: DaemonProcess, extensionPath: String? = nil) throws {
        try daemon.register(app, group: group, extensionPath: extensionPath)
    }

    static func appClient(_ daemon: DaemonProcess, inbox: EventInbox? = nil) throws -> DaemonClient {
        try daemon.appClient(app, onEvent: { event in inbox?.append(event) })
    }

    static func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    @Test("an app schedules, hears began/progress/finished, finds the file in its container; acknowledging removes it")
    func scheduleAndDeliver() async throws {
        let server = try await AssetServer.start()
        let files = [("a.bin", Self.bytes(300_000, seed: 1)), ("b.bin", Self.bytes(5_000, seed: 2))]
        for (name, contents) in files { server.setFile("/" + name, contents: contents) }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try Self.register(daemon)
        let inbox = EventInbox()
        let client = try Self.appClient(daemon, inbox: inbox)
        defer { client.close() }
        #expect(client.welcome.appGroupContainer == daemon.stateDirectory + "/groups/" + Self.group)
        try client.call(.subscribeEvents)
        for (name, contents) in files {
            let reply = try client.call(
                .schedule(
                    DownloadDescription(
                        identifier: name, url: server.url("/" + name), applicationGroupIdentifier: Self.group,
                        priority: 50, fileSize: Int64(contents.count))))
            guard case .downloads(let stored) = reply else { throw HarnessError("schedule answered \(reply)") }
            #expect(stored.map(\.download.identifier) == [name])
        }
        let events = try await inbox.wait("both finished") { events in events.filter { $0.kind == .finished }.count == 2
        }
        for (name, contents) in files {
            let mine = events.filter { $0.identifier == name }
            #expect(mine.first?.kind == .began)
            #expect(mine.first?.download?.identifier == name)
            let finished = try #require(mine.first { $0.kind == .finished })
            let path = try #require(finished.destination)
            // basd's own folder for the group, out of every extension's reach (docs/threat-model.md).
            #expect(path.hasPrefix(daemon.stateDirectory + "/transfers/" + Self.group + "/finished/"), "\(path)")
            #expect(finished.size == Int64(contents.count))
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(contents))
        }
        // Sequences increase; durable events are acknowledged, then the unmoved files are gone.
        let durable = events.filter { $0.sequence > 0 }.map(\.sequence)
        #expect(durable == durable.sorted())
        try client.call(.acknowledgeEvents(throughSequence: try #require(durable.last)))
        for event in events where event.kind == .finished {
            #expect(!FileManager.default.fileExists(atPath: try #require(event.destination)))
        }
        guard case .downloads(let current) = try client.call(.currentDownloads) else { throw HarnessError("no list") }
        #expect(current.isEmpty)
        let cli = try daemon.cliClient()
        defer { cli.close() }
        guard case .downloads(let all) = try cli.call(.listDownloads(app: nil)) else { throw HarnessError("no list") }
        #expect(all.map(\.state) == [.finished, .finished])
        #expect(all.allSatisfy { $0.appIdentifier == Self.app })
        try await server.shutdown()
    }

    @Test("refusals carry Apple's codes: 100, 101, 109, 0, 50-style role errors, 55 for an unknown app")
    func refusals() async throws {
        let server = try await AssetServer.start()
        server.setFile("/slow.bin", contents: Self.bytes(100_000, seed: 3))
        server.setBehavior(.stall(afterBytes: 1000), for: "/slow.bin")
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try Self.register(daemon)
        let client = try Self.appClient(daemon)
        defer { client.close() }
        func code(_ request: Request) -> Int? {
            do {
                try client.call(request)
                return nil
            } catch {
                return error.code
            }
        }
        let slow = DownloadDescription(identifier: "slow", url: server.url("/slow.bin"), fileSize: 100_000)
        #expect(code(.schedule(slow)) == nil)
        #expect(code(.schedule(slow)) == 100)
        #expect(code(.cancel(identifier: "nope")) == 101)
        #expect(code(.startForeground(identifier: "nope")) == 101)
        var essential = slow
        essential.identifier = "essential"
        essential.isEssential = true
        #expect(code(.schedule(essential)) == 109)
        #expect(code(.schedule(DownloadDescription(identifier: "x", url: "http://example.com/x"))) == 0)
        #expect(code(.schedule(DownloadDescription(identifier: "../x", url: server.url("/slow.bin")))) == 0)
        var otherGroup = slow
        otherGroup.identifier = "other"
        otherGroup.applicationGroupIdentifier = "group.someone.else"
        #expect(code(.schedule(otherGroup)) == 0)
        #expect(code(.listDownloads(app: nil)) == 56)
        #expect(code(.cancel(identifier: "slow")) == nil)
        #expect(code(.cancel(identifier: "slow")) == 101)

        let cli = try daemon.cliClient()
        defer { cli.close() }
        #expect(throws: DaemonClientError.self) { try cli.call(.schedule(slow)) }
        #expect(throws: DaemonClientError.self) { try cli.call(.cancelDownload(uniqueIdentifier: "nope")) }
        let stranger = #expect(throws: DaemonClientError.self) {
            try daemon.appClient("com.example.stranger")
        }
        #expect(stranger?.code == 55)
        #expect(stranger?.message.contains("not registered") == true)
        try await server.shutdown()
    }

    @Test("promotion keeps the bytes: paused then began in the foreground with a ranged request")
    func promote() async throws {
        let server = try await AssetServer.start()
        let contents = Self.bytes(2_000_000, seed: 4)
        server.setFile("/big.bin", contents: contents)
        // Held at 300 KB until the promotion (a trickle raced the test on a loaded machine: the
        // file was complete before the promotion reached basd).
        server.setBehavior(.stall(afterBytes: 300_000), for: "/big.bin")
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try Self.register(daemon)
        let inbox = EventInbox()
        let client = try Self.appClient(daemon, inbox: inbox)
        defer { client.close() }
        try client.call(.subscribeEvents)
        try client.call(.schedule(DownloadDescription(identifier: "big", url: server.url("/big.bin"))))
        try await inbox.wait("some progress") { events in
            events.contains { $0.kind == .progress && ($0.bytesWritten ?? 0) > 100_000 }
        }
        server.setBehavior(nil, for: "/big.bin")
        try client.call(.startForeground(identifier: "big"))
        let events = try await inbox.wait("finished") { $0.contains { $0.kind == .finished } }
        let kinds = events.map(\.kind).filter { $0 != .progress }
        #expect(kinds == [.began, .paused, .began, .finished])
        #expect(events.last { $0.kind == .began }?.isForeground == true)
        #expect((events.last { $0.kind == .began }?.offset ?? 0) > 0)
        let requests = server.requests(for: "/big.bin")
        #expect(requests.count == 2)
        #expect(requests.last?.header("Range") != nil)
        let path = try #require(events.last?.destination)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(contents))
        try await server.shutdown()
    }

    @Test("a credential request reaches the app, whose answer lets the transfer finish; a 404 fails with a reason")
    func challengeAndFailure() async throws {
        let server = try await AssetServer.start()
        server.setFile("/private.bin", contents: Self.bytes(10_000, seed: 5))
        server.setBehavior(.requireBasicAuth(user: "player", password: "s3cret"), for: "/private.bin")
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try Self.register(daemon)
        let inbox = EventInbox()
        let client = try Self.appClient(daemon, inbox: inbox)
        defer { client.close() }
        try client.call(.subscribeEvents)
        try client.call(.schedule(DownloadDescription(identifier: "private", url: server.url("/private.bin"))))
        try client.call(.schedule(DownloadDescription(identifier: "missing", url: server.url("/missing.bin"))))
        let asked = try await inbox.wait("a credential request") { $0.contains { $0.kind == .needsCredentials } }
        let challenge = try #require(asked.first { $0.kind == .needsCredentials })
        #expect(challenge.challenge?.lowercased().hasPrefix("basic") == true)
        try client.call(
            .respondToChallenge(
                uniqueIdentifier: challenge.downloadUniqueIdentifier, disposition: 0, user: "player",
                password: "s3cret"))
        let events = try await inbox.wait("finished and failed") { events in
            events.contains { $0.kind == .finished } && events.contains { $0.kind == .failed }
        }
        #expect(events.first { $0.kind == .finished }?.identifier == "private")
        let failed = try #require(events.first { $0.kind == .failed })
        #expect(failed.identifier == "missing")
        #expect(failed.errorDomain == "NSURLErrorDomain")
        #expect(failed.errorMessage?.contains("404") == true, "\(failed.errorMessage ?? "")")
        try await server.shutdown()
    }

    @Test("with no app listening, a finished download wakes the sample extension, which moves it into Assets/")
    func extensionWokenForFinished() async throws {
        let server = try await AssetServer.start()
        let catalog = Array(#"{"title": "Sample catalog", "assets": []}"#.utf8)
        server.setFile("/catalog.json", contents: catalog)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try Self.register(daemon, extensionPath: BuildProducts.library("SampleSwiftExtension"))
        let client = try Self.appClient(daemon)
        try client.call(.schedule(DownloadDescription(identifier: "catalog", url: server.url("/catalog.json"))))
        client.close()  // nobody listens: the extension gets the event
        try await Self.waitForFinishedRun(daemon)
        let kept = daemon.stateDirectory + "/groups/" + Self.group + "/Assets/catalog"
        #expect(FileManager.default.contents(atPath: kept) == Data(catalog), "basd log: \(daemon.standardError)")
        #expect(await daemon.logged("SampleSwiftExtension: scheduled 0 assets from the catalog"))
        // The event is delivered: a new app connection hears nothing about it, and basd leaves the
        // moved file alone.
        let inbox = EventInbox()
        let again = try Self.appClient(daemon, inbox: inbox)
        defer { again.close() }
        try again.call(.subscribeEvents)
        try again.call(.status)
        #expect(inbox.all.filter { $0.sequence > 0 }.isEmpty)
        #expect(FileManager.default.fileExists(atPath: kept))
        try await server.shutdown()
    }

    @Test("an app that connects while its extension handles a finished download is not sent it too")
    func anEventInTheExtensionIsNotAlsoTheApps() async throws {
        let server = try await AssetServer.start()
        let catalog = Array(#"{"title": "Sample catalog", "assets": []}"#.utf8)
        server.setFile("/catalog.json", contents: catalog)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try Self.register(daemon, extensionPath: BuildProducts.library("SampleSwiftExtension"))
        let container = daemon.stateDirectory + "/groups/" + Self.group
        try FileManager.default.createDirectory(atPath: container, withIntermediateDirectories: true)
        let lockPath = container + "/.background-assets-exclusive-control.lock"

        // The test holds exclusive control, so the sample extension's finished call waits in it.
        let holder = try LockHoldingProcess(path: lockPath)
        defer { holder.release() }
        _ = try await CLIQueries.poll(
            "the test's flock on \(lockPath)", daemon, timeout: 20, read: { Self.lockWaiters(lockPath) },
            until: { $0.held })
        let client = try Self.appClient(daemon)
        try client.call(.schedule(DownloadDescription(identifier: "catalog", url: server.url("/catalog.json"))))
        client.close()  // nobody listens: the extension gets the event, and waits for the lock
        _ = try await CLIQueries.poll(
            "the extension waiting for exclusive control", daemon, timeout: 60, read: { Self.lockWaiters(lockPath) },
            until: { $0.waiting > 0 })

        // The app connects now. Its subscription's backlog is sent before the reply to a later
        // request, so after `status` answers, anything basd would send is in the inbox.
        let inbox = EventInbox()
        let app = try Self.appClient(daemon, inbox: inbox)
        defer { app.close() }
        try app.call(.subscribeEvents)
        try app.call(.status)
        #expect(!inbox.all.contains { $0.kind == .finished }, "sent to the app while the extension has it")

        // The extension gets the lock, moves the file and its call ends ok: the event was its own.
        holder.release()
        try await Self.waitForFinishedRun(daemon)
        try app.call(.status)
        #expect(!inbox.all.contains { $0.kind == .finished }, "\(inbox.all)")
        #expect(FileManager.default.contents(atPath: container + "/Assets/catalog") == Data(catalog))
        try await server.shutdown()
    }

    /// Waits until basd recorded an `ok` run of the extension for a finished download (it records
    /// the run once the call's effects are applied, the event acknowledged).
    static func waitForFinishedRun(_ daemon: DaemonProcess) async throws {
        _ = try await CLIQueries.poll(
            "the extension's finished run", daemon, timeout: 60, read: { try await CLIQueries.app(daemon) },
            until: { app in
                (app["lastRuns"] as? [[String: Any]] ?? []).contains {
                    $0["event"] as? String == "finished" && $0["verdict"] as? String == "ok"
                }
            })
    }

    /// Whether the `flock` on `path` is held, and how many processes wait for it (`/proc/locks`
    /// lists a waiter with `->`), matched by the file's inode.
    static func lockWaiters(_ path: String) -> (held: Bool, waiting: Int) {
        var status = stat()
        // Read to the end: `String(contentsOfFile:)` stops after 4 KiB of a /proc file (its size
        // reads as 0), and with many basds and runners alive the test's lock was past that.
        guard stat(path, &status) == 0,
            let data = try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/locks")).readToEnd()
        else { return (false, 0) }
        let locks = String(decoding: data, as: UTF8.self)
        let lines = locks.split(separator: "\n").filter { $0.contains(":\(status.st_ino) ") }
        return (lines.contains { !$0.contains("->") }, lines.filter { $0.contains("->") }.count)
    }
}

@Suite("basd crash safety")
struct DaemonCrashTests {
    @Test(
        "SIGKILL mid-transfer: after a restart every download completes intact, acknowledged events are not redelivered"
    )
    func killMidTransfer() async throws {
        let server = try await AssetServer.start()
        let size = 3_000_000
        let files = (0..<3).map { index in ("f\(index).bin", DownloadServiceTests.bytes(size, seed: UInt8(index + 10)))
        }
        for (name, contents) in files {
            server.setFile("/" + name, contents: contents)
            // Held at 1.5 MB until basd is killed (a trickle raced the test on a loaded machine).
            server.setBehavior(.stall(afterBytes: 1_500_000), for: "/" + name)
        }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try DownloadServiceTests.register(daemon)

        // First life: schedule, acknowledge what arrives, kill basd once a transfer is past 1.2 MB.
        let first = EventInbox()
        let client = try DownloadServiceTests.appClient(daemon, inbox: first)
        try client.call(.subscribeEvents)
        for (name, _) in files {
            try client.call(
                .schedule(DownloadDescription(identifier: name, url: server.url("/" + name), fileSize: Int64(size))))
        }
        try await first.wait("a transfer past 1.2 MB") { events in
            events.contains { $0.kind == .progress && ($0.bytesWritten ?? 0) > 1_200_000 }
        }
        var acknowledged = Set(first.all.filter { $0.sequence > 0 }.map(\.sequence))
        if let last = acknowledged.max() { try client.call(.acknowledgeEvents(throughSequence: last)) }
        daemon.send(SIGKILL)
        #expect(daemon.waitForExit(timeout: 20) != nil)
        client.close()
        #expect(first.all.contains { $0.kind == .finished } == false)
        for (name, _) in files { server.setBehavior(nil, for: "/" + name) }

        // Second life: the same state folder; the client reconnects and deduplicates by sequence.
        let again = try await DaemonProcess.start(directory: daemon.directory)
        defer { again.kill() }
        let second = EventInbox()
        let reconnected = try DownloadServiceTests.appClient(again, inbox: second)
        defer { reconnected.close() }
        try reconnected.call(.subscribeEvents)
        let events = try await second.wait("all finished") { events in
            Set(events.filter { $0.kind == .finished }.map(\.identifier)).count == files.count
        }
        let redelivered = events.filter { acknowledged.contains($0.sequence) }
        #expect(redelivered.isEmpty, "acknowledged events came again: \(redelivered.map(\.sequence))")
        var delivered: [String: Int] = [:]
        for event in events where event.sequence > 0 && event.kind == .finished {
            guard acknowledged.insert(event.sequence).inserted else { continue }  // the client's dedup
            delivered[event.identifier, default: 0] += 1
        }
        #expect(delivered == Dictionary(uniqueKeysWithValues: files.map { ($0.0, 1) }))
        for (name, contents) in files {
            let finished = try #require(events.first { $0.kind == .finished && $0.identifier == name })
            let path = try #require(finished.destination)
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(contents), "\(name) is corrupt")
        }
        // The transfer that was past 1 MiB resumed with a ranged request instead of starting over.
        let ranged = files.flatMap { server.requests(for: "/" + $0.0) }.filter { $0.header("Range") != nil }
        #expect(!ranged.isEmpty, "no transfer resumed from its partial file")
        try await server.shutdown()
    }
}
