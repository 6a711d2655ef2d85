import BAAssetServer
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// BADownloadManager in an app process (BATestApp) against a real basd and the loopback asset
/// server: delegate delivery, error codes, reconnects and exclusive control across processes.
@Suite("app client", .serialized)
struct AppClientTests {
    static let app = "com.example.appclient"
    static let group = "group.com.example.appclient"

    static func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    static func sha256Hex(_ bytes: [UInt8]) throws -> String {
        // The app prints it; recompute here with a second implementation: `sha256sum`.
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/file"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return String(try runProcessBlocking("/usr/bin/env", ["sha256sum", path]).stdout.prefix(64))
    }

    /// basd with the test app registered.
    static func daemon() async throws -> DaemonProcess {
        let basd = try await DaemonProcess.start()
        try basd.register(app, group: group)
        return basd
    }

    /// Lines of `file`, waiting until there are `count` (polling with a deadline).
    static func lines(of file: String, count: Int, timeout: Double = 60) throws -> [String] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n").map(String.init)
            if lines.count >= count { return lines }
            guard Date() < deadline else { throw HarnessError("\(file) has \(lines.count) of \(count) lines") }
            var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
            nanosleep(&pause, nil)  // polling a file another process writes; bounded by the deadline
        }
    }

    @Test("the delegate hears began, progress as deltas, and finished with the file; unmoved files are removed")
    func deliversToTheDelegate() async throws {
        let server = try await AssetServer.start()
        let contents = Self.bytes(700_000, seed: 7)
        server.setFile("/a.bin", contents: contents)
        let basd = try await Self.daemon()
        defer { basd.kill() }
        let app = try TestApp(socketPath: basd.socketPath, bundleIdentifier: Self.app, group: Self.group)
        defer { app.kill() }

        let scheduled = try await app.run("schedule a \(server.url("/a.bin")) \(contents.count)")
        #expect(scheduled.bool("ok") == true, "\(scheduled.object)")
        let finished = try await app.wait("finished") { $0.callback == "finished" }[0]
        #expect(finished.int("size") == contents.count)
        #expect(finished.string("sha256") == (try Self.sha256Hex(contents)))
        let path = try #require(finished.string("path"))
        #expect(path.hasPrefix(basd.stateDirectory + "/transfers/" + Self.group + "/finished/"), "\(path)")

        let mine = app.lines.filter { $0.string("identifier") == "a" && $0.callback != nil }
        #expect(mine.first?.callback == "began")
        #expect(mine.last?.callback == "finished")
        #expect(mine.first?.string("uniqueIdentifier") == scheduled.string("uniqueIdentifier"))
        let progress = mine.filter { $0.callback == "progress" }
        // Deltas add up to the last total, which is never past the size.
        let deltas = progress.compactMap { $0.int("bytesWritten") }
        #expect(deltas.allSatisfy { $0 > 0 })
        if let last = progress.last {
            #expect(deltas.reduce(0, +) == last.int("totalBytesWritten"))
            #expect(last.int("totalBytesExpectedToWrite") == contents.count)
        }
        // Removed after the callback returned (then acknowledged).
        try Self.waitUntil("the delivered file is removed") { !FileManager.default.fileExists(atPath: path) }
        let list = try await app.run("list")
        #expect((list["downloads"] as? [Any])?.isEmpty == true)
        try await server.shutdown()
    }

    @Test("a file the app moves in the callback is kept")
    func movedFileIsKept() async throws {
        let server = try await AssetServer.start()
        let contents = Self.bytes(10_000, seed: 2)
        server.setFile("/m.bin", contents: contents)
        let basd = try await Self.daemon()
        defer { basd.kill() }
        let keep = basd.directory.path + "/kept"
        try FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
        let app = try TestApp(
            socketPath: basd.socketPath, bundleIdentifier: Self.app, group: Self.group,
            environment: ["BA_TEST_APP_MOVE_TO": keep])
        defer { app.kill() }
        #expect(try await app.run("schedule m \(server.url("/m.bin")) \(contents.count)").bool("ok") == true)
        let finished = try await app.wait("finished") { $0.callback == "finished" }[0]
        #expect(finished.string("movedTo") == keep + "/m")
        #expect(try Data(contentsOf: URL(fileURLWithPath: keep + "/m")) == Data(contents))
        try await server.shutdown()
    }

    @Test("basd's refusals reach the app with Apple's codes")
    func refusals() async throws {
        let server = try await AssetServer.start()
        server.setFile("/slow.bin", contents: Self.bytes(100_000, seed: 3))
        server.setBehavior(.stall(afterBytes: 1000), for: "/slow.bin")
        let basd = try await Self.daemon()
        defer { basd.kill() }
        let app = try TestApp(socketPath: basd.socketPath, bundleIdentifier: Self.app, group: Self.group)
        defer { app.kill() }
        let url = server.url("/slow.bin")
        #expect(try await app.run("schedule slow \(url) 100000").bool("ok") == true)
        #expect(try await app.run("schedule slow \(url) 100000").errorCode == 100)
        #expect(try await app.run("schedule ess \(url) 100000 essential").errorCode == 109)
        #expect(try await app.run("cancel nope").errorCode == 101)
        #expect(try await app.run("promote nope").errorCode == 101)
        let list = try await app.run("alist")
        let identifiers = (list["downloads"] as? [[String: Any]])?.compactMap { $0["identifier"] as? String }
        #expect(identifiers == ["slow"])
        #expect(try await app.run("cancel slow").bool("ok") == true)
        #expect(try await app.run("cancel slow").errorCode == 101)

        // An app basd does not know, and a socket nobody listens on: 55, saying why.
        let stranger = try TestApp(
            socketPath: basd.socketPath, bundleIdentifier: "com.example.stranger", group: Self.group)
        defer { stranger.kill() }
        let refused = try await stranger.run("list")
        #expect(refused.errorCode == 55)
        #expect(refused.errorReason?.contains("not registered") == true)
        let nowhere = basd.directory.path + "/nobody.sock"
        let lonely = try TestApp(socketPath: nowhere, bundleIdentifier: Self.app, group: Self.group)
        defer { lonely.kill() }
        let unreachable = try await lonely.run("list")
        #expect(unreachable.errorCode == 55)
        #expect(unreachable.errorReason?.contains(nowhere) == true)
        try await server.shutdown()
    }

    @Test("promotion: the delegate sees paused, then began, and the file arrives whole")
    func promote() async throws {
        let server = try await AssetServer.start()
        let contents = Self.bytes(1_000_000, seed: 4)
        server.setFile("/big.bin", contents: contents)
        server.setBehavior(.trickle(bytesPerSecond: 300_000), for: "/big.bin")
        let basd = try await Self.daemon()
        defer { basd.kill() }
        let app = try TestApp(socketPath: basd.socketPath, bundleIdentifier: Self.app, group: Self.group)
        defer { app.kill() }
        #expect(try await app.run("schedule big \(server.url("/big.bin")) \(contents.count)").bool("ok") == true)
        try await app.wait("some progress") { $0.callback == "progress" }
        server.setBehavior(nil, for: "/big.bin")
        #expect(try await app.run("promote big").bool("ok") == true)
        let finished = try await app.wait("finished") { $0.callback == "finished" }[0]
        #expect(finished.string("sha256") == (try Self.sha256Hex(contents)))
        let kinds = app.lines.compactMap(\.callback).filter { $0 != "progress" }
        #expect(kinds == ["began", "paused", "began", "finished"])
        // Without a re-download: the foreground transfer resumed with a ranged request.
        let requests = server.requests(for: "/big.bin")
        #expect(requests.count == 2)
        #expect(requests.last?.header("Range")?.hasPrefix("bytes=") == true)
        #expect(requests.last?.header("Range") != "bytes=0-")
        try await server.shutdown()
    }

    @Test("a challenge goes to the async delegate method; its credential is used")
    func challenge() async throws {
        let server = try await AssetServer.start()
        let contents = Self.bytes(5_000, seed: 5)
        server.setFile("/secret.bin", contents: contents)
        server.setBehavior(.requireBasicAuth(user: "u", password: "p"), for: "/secret.bin")
        let basd = try await Self.daemon()
        defer { basd.kill() }
        let app = try TestApp(
            socketPath: basd.socketPath, bundleIdentifier: Self.app, group: Self.group,
            environment: ["BA_TEST_APP_CREDENTIAL": "u:p"])
        defer { app.kill() }
        #expect(try await app.run("schedule secret \(server.url("/secret.bin")) \(contents.count)").bool("ok") == true)
        let challenge = try await app.wait("the challenge") { $0.callback == "challenge" }[0]
        #expect(challenge.string("realm") == "assets")
        #expect(challenge.string("method") == "NSURLAuthenticationMethodHTTPBasic")
        let finished = try await app.wait("finished") { $0.callback == "finished" }[0]
        #expect(finished.int("size") == contents.count)
        try await server.shutdown()
    }

    @Test("after basd is killed and restarted, the app reconnects and each event is delivered once")
    func reconnects() async throws {
        let server = try await AssetServer.start()
        let contents = Self.bytes(600_000, seed: 6)
        server.setFile("/r.bin", contents: contents)
        server.setBehavior(.trickle(bytesPerSecond: 200_000), for: "/r.bin")
        var basd = try await Self.daemon()
        defer { basd.kill() }
        let app = try TestApp(socketPath: basd.socketPath, bundleIdentifier: Self.app, group: Self.group)
        defer { app.kill() }
        #expect(try await app.run("schedule r \(server.url("/r.bin")) \(contents.count)").bool("ok") == true)
        try await app.wait("some progress") { $0.callback == "progress" }
        basd = try await basd.restarted()
        server.setBehavior(nil, for: "/r.bin")
        let finished = try await app.wait(timeout: 60, "finished after the restart") { $0.callback == "finished" }[0]
        #expect(finished.string("sha256") == (try Self.sha256Hex(contents)))
        #expect(try await app.run("list").bool("ok") == true, "calls work on the new connection")
        #expect(app.lines.filter { $0.callback == "finished" }.count == 1)
        try await server.shutdown()
    }

    // MARK: Exclusive control

    @Test("two app processes never hold exclusive control at once (closure and async forms)")
    func exclusiveControlContention() async throws {
        let basd = try await Self.daemon()
        defer { basd.kill() }
        let file = basd.directory.path + "/critical.log"
        let first = try TestApp(socketPath: basd.socketPath, bundleIdentifier: Self.app, group: Self.group)
        defer { first.kill() }
        let second = try TestApp(socketPath: basd.socketPath, bundleIdentifier: Self.app, group: Self.group)
        defer { second.kill() }
        let rounds = 8
        for _ in 0..<rounds {
            first.send("lock 15 \(file)")
            second.send("alock 15 \(file)")
        }
        try await first.wait(timeout: 60, "the closure form's rounds", count: rounds) {
            $0.command == "lock" && $0["event"] == nil
        }
        try await second.wait(timeout: 60, "the async form's rounds", count: rounds) {
            $0.command == "alock" && $0["event"] == nil
        }
        #expect(first.lines.filter { $0.command == "lock" && $0["event"] == nil }.allSatisfy { $0.bool("ok") == true })
        #expect(
            second.lines.filter { $0.command == "alock" && $0["event"] == nil }.allSatisfy { $0.bool("ok") == true })
        let lines = try Self.lines(of: file, count: 4 * rounds)
        #expect(lines.count == 4 * rounds)
        for pair in stride(from: 0, to: lines.count - 1, by: 2) {
            let enter = lines[pair].split(separator: " ")
            let leave = lines[pair + 1].split(separator: " ")
            #expect(
                enter.first == "enter" && leave.first == "leave" && enter.last == leave.last, "interleaved: \(lines)")
        }
        // The lock file is the one in basd's container for the group (the extension's runner locks it too).
        #expect(
            FileManager.default.fileExists(
                atPath: basd.stateDirectory + "/groups/" + Self.group + "/.background-assets-exclusive-control.lock"))
    }

    @Test("Date() tries once and fails while another process holds the lock; SIGKILLing the holder frees it")
    func killedHolderReleases() async throws {
        let basd = try await Self.daemon()
        defer { basd.kill() }
        let file = basd.directory.path + "/critical.log"
        let holder = try TestApp(socketPath: basd.socketPath, bundleIdentifier: Self.app, group: Self.group)
        defer { holder.kill() }
        let waiter = try TestApp(socketPath: basd.socketPath, bundleIdentifier: Self.app, group: Self.group)
        defer { waiter.kill() }
        holder.send("lock 600000 \(file)")
        try await holder.wait("the holder has the lock") { $0["event"] as? String == "locked" }

        let started = Date()
        let attempt = try await waiter.run("trylock")
        #expect(attempt.bool("ok") == false)
        #expect(attempt.errorReason?.contains("held by another process") == true)
        #expect(Date().timeIntervalSince(started) < 5, "a try-once attempt does not wait")

        waiter.send("lock 0 \(file)")
        holder.kill()
        try await waiter.wait("the waiter gets the lock after the holder died") { $0["event"] as? String == "locked" }
        let lines = try Self.lines(of: file, count: 3)
        #expect(lines.prefix(3) == ["enter \(holder.pid)", "enter \(waiter.pid)", "leave \(waiter.pid)"])
    }

    @Test("containerURL(forSecurityApplicationGroupIdentifier:): basd's container for the app's group, nil otherwise")
    func containerURLForTheAppGroup() async throws {
        var basd = try await Self.daemon()
        defer { basd.kill() }
        let container = basd.stateDirectory + "/groups/" + Self.group
        let app = try TestApp(socketPath: basd.socketPath, bundleIdentifier: Self.app, group: Self.group)
        defer { app.kill() }
        #expect(try await app.run("container \(Self.group)").string("path") == container)
        #expect(try await app.run("container group.com.example.other")["path"] is NSNull)
        // Remembered once known: still answered while basd is away.
        basd.stop()
        #expect(try await app.run("container \(Self.group)").string("path") == container)

        // An app registered without an app group has no container.
        basd = try await basd.restarted()
        try basd.register("com.example.nogroup", group: nil)
        let loner = try TestApp(socketPath: basd.socketPath, bundleIdentifier: "com.example.nogroup", group: Self.group)
        defer { loner.kill() }
        #expect(try await loner.run("container \(Self.group)")["path"] is NSNull)
    }

    static func waitUntil(_ what: String, timeout: Double = 30, _ condition: () -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !condition() {
            guard Date() < deadline else { throw HarnessError("timed out waiting until \(what)") }
            var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
            nanosleep(&pause, nil)  // polling the file system; bounded by the deadline
        }
    }
}
