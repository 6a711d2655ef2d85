import BAAssetServer
import BACore
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

/// `ba events --follow` during an outage showed a download "began" once per attempt and never
/// that it was waiting, or why. Now the first `began` is the only one (the app's delegate hears
/// Apple's `downloadDidBegin` once), and each failed attempt is a transient `waiting` event for
/// the CLI observers, with the reason and the next attempt's time.
@Suite("the waiting event", .timeLimit(.minutes(3)))
struct WaitingEventTests {
    let ba = BuildProducts.executable("ba")

    /// The JSON objects `ba events --json` printed about `identifier`.
    static func events(_ follower: ChildProcess, _ identifier: String) -> [[String: Any]] {
        follower.stdoutLines.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["identifier"] as? String == identifier
            else { return nil }
            return object
        }
    }

    static func kinds(_ events: [[String: Any]]) -> [String] {
        events.compactMap { $0["kind"] as? String }.filter { $0 != "progress" }
    }

    func follow(_ daemon: DaemonProcess, json: Bool) throws -> ChildProcess {
        let follower = try ChildProcess(
            ba, ["events", "--follow", "--socket", daemon.socketPath] + (json ? ["--json"] : []))
        try follower.wait("subscribed") { $0.stderr.contains("following events") }
        return follower
    }

    @Test("a server answering 503 twice: one began, two waiting events with the status and the next time, finished")
    func serviceUnavailableThenRecovers() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        server.setFile("/busy.bin", contents: [UInt8](repeating: 5, count: 20_000))
        server.setBehavior(.status(503, times: 2), for: "/busy.bin")
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try RetryCommandTests.register(daemon)
        let json = try follow(daemon, json: true)
        defer { json.kill() }
        let human = try follow(daemon, json: false)
        defer { human.kill() }
        let scheduledAt = Date()
        _ = try RetryCommandTests.schedule(daemon, "busy", url: server.url("/busy.bin"))
        try await json.waiting("the download to finish", timeout: 60) {
            Self.kinds(Self.events($0, "busy")).contains("finished")
        }
        let events = Self.events(json, "busy")
        #expect(Self.kinds(events) == ["began", "waiting", "waiting", "finished"], "\(json.stdout)")
        let waiting = events.filter { $0["kind"] as? String == "waiting" }
        for (index, event) in waiting.enumerated() {
            #expect(event["attempt"] as? Int == index + 1, "\(event)")
            #expect((event["reason"] as? String ?? "").contains("503"), "\(event)")
            #expect(event["sequence"] as? Int == 0, "transient: \(event)")
            let retryAt = Double(event["retryAt"] as? Int ?? 0) / 1000
            // The next attempt is after the schedule and within the background backoff's first steps.
            #expect(retryAt >= scheduledAt.timeIntervalSince1970 - 1, "\(event)")
            #expect(retryAt <= Date().timeIntervalSince1970 + 60, "\(event)")
        }
        #expect(server.requests(for: "/busy.bin").count == 3)
        // The app's stream (the durable events) has its began once.
        #expect(events.filter { $0["kind"] as? String == "began" && ($0["sequence"] as? Int ?? 0) > 0 }.count == 1)

        try await human.waiting("the human lines", timeout: 20) { $0.stdout.contains(" finished ") }
        let lines = human.stdoutLines.filter { $0.contains(" busy ") }
        let waitingLines = lines.filter { $0.contains(" waiting ") }
        #expect(waitingLines.count == 2, "\(human.stdout)")
        for line in waitingLines {
            #expect(line.contains("failed: "), "\(line)")
            #expect(line.contains("503"), "\(line)")
            #expect(line.contains("; next attempt at "), "\(line)")
        }
        #expect(lines.filter { $0.contains(" began ") }.count == 1, "\(human.stdout)")
    }

    @Test("connection refused, then the server comes up: waiting events say so, then the download finishes")
    func refusedThenRecovers() async throws {
        let port = try RetryCommandTests.closedPort()
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try RetryCommandTests.register(daemon)
        let json = try follow(daemon, json: true)
        defer { json.kill() }
        let id = try RetryCommandTests.schedule(daemon, "down", url: "http://127.0.0.1:\(port)/down.bin")
        try await json.waiting("two waiting events", timeout: 60) {
            Self.kinds(Self.events($0, "down")).filter { $0 == "waiting" }.count >= 2
        }
        let server = try await AssetServer.start(port: port)
        defer { Task { try? await server.shutdown() } }
        server.setFile("/down.bin", contents: [UInt8](repeating: 9, count: 4096))
        // Not waiting for the backoff: the next attempt now. The backoff's own attempt may come
        // first (between the server's start and this call, on a loaded machine): then the download
        // has ended and there is nothing to retry (32); it finishes all the same (below).
        let retry = try await runProcess(ba, ["retry", id, "--socket", daemon.socketPath])
        #expect(retry.status == 0 || retry.status == 32, "\(retry.stdout)\(retry.stderr)")
        try await json.waiting("the download to finish", timeout: 60) {
            Self.kinds(Self.events($0, "down")).contains("finished")
        }
        let kinds = Self.kinds(Self.events(json, "down"))
        #expect(kinds.first == "began" && kinds.last == "finished", "\(kinds)")
        #expect(kinds.filter { $0 == "began" }.count == 1, "one began for all the attempts: \(kinds)")
        let waiting = Self.events(json, "down").filter { $0["kind"] as? String == "waiting" }
        #expect(waiting.count >= 2)
        for event in waiting {
            #expect((event["reason"] as? String ?? "").contains("127.0.0.1:\(port)"), "\(event)")
            #expect((event["reason"] as? String ?? "").contains("onnect"), "connection refused: \(event)")
            #expect(event["retryAt"] is Int, "\(event)")
        }
    }
}
