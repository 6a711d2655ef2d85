import BAAssetServer
import BADownloadEngine
import BATestSupport
import Foundation
import Testing

/// A server that gives no answer, with a real engine: its transfers wait together, one is tried
/// at a time, and its first answer starts them all (``ServerGate``).
extension EngineTests {
    /// A loopback port nothing listens on (below the ephemeral range: no parallel test gets it).
    func closedPort() throws -> Int {
        for _ in 0..<100 {
            let port = TestPorts.belowEphemeralRange()
            let probe = try? runProcessBlocking(
                "/usr/bin/python3",
                [
                    "-c",
                    "import socket,sys; s=socket.socket(); sys.exit(0 if s.connect_ex(('127.0.0.1', \(port))) else 1)",
                ])
            if probe?.status == 0 { return port }
        }
        throw HarnessError("no closed loopback port found")
    }

    @Test("essential transfers to a refusing server: one probe at a time, all go at its first answer")
    func refusingServerIsProbedOnceForAll() async throws {
        let port = try closedPort()
        let engine = DownloadEngine(configuration: DownloadEngine.Configuration(), clock: clock)
        let events = EventReader(engine)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let names = ["a", "b", "c"]
        for name in names {
            engine.add(
                DownloadRequest(
                    id: name, url: "http://127.0.0.1:\(port)/\(name).bin",
                    destination: directory.path + "/\(name).bin", isEssential: true))
        }
        // Each fails once (refused) and waits; the first failure closes the gate, once.
        var waiting: Set<String> = []
        while waiting.count < 3 {
            guard case .retrying(let id, _, _, let reason) = await nextRetry(events) else {
                Issue.record("\(events.seen)")
                return
            }
            #expect(reason.contains("127.0.0.1:\(port)"), "\(reason)")
            waiting.insert(id)
        }
        let downs = events.seen.filter { if case .serverWaiting = $0 { true } else { false } }
        #expect(downs.count == 1, "\(events.seen)")
        guard case .serverWaiting(let gated, _, let next, let count)? = downs.first else { return }
        #expect(gated == "http://127.0.0.1:\(port)")
        #expect(next <= .seconds(2), "urgent: a probe within 2 s")
        #expect(count == 1, "the first failure closed it")

        // Due: one transfer (the earliest) is tried, fails again, and the next try is later.
        let beforeProbe = events.seen.count
        clock.advance(by: .seconds(2))
        engine.wake()
        guard case .retrying(let probe, _, _, _) = await nextRetry(events) else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(probe == "a", "the earliest waiter is the probe")
        let began = events.seen.dropFirst(beforeProbe).filter { if case .began = $0 { true } else { false } }
        #expect(began.map(\.id) == ["a"], "one probe, not each transfer: \(events.seen.dropFirst(beforeProbe))")

        // The server comes up; the next probe gets its answer and every transfer goes on.
        let server = try await AssetServer.start(port: port)
        defer { Task { try? await server.shutdown() } }
        for name in names { server.setFile("/\(name).bin", contents: bytes(5000, seed: UInt8(name.utf8.first ?? 0))) }
        clock.advance(by: .seconds(2))
        engine.wake()
        var finished: Set<String> = []
        while finished.count < 3 {
            guard let event = await events.next(where: { if case .finished = $0 { true } else { false } }) else {
                Issue.record("\(events.seen)")
                return
            }
            finished.insert(event.id)
        }
        let answered = events.seen.compactMap { event -> Int? in
            if case .serverAnswered(_, let released, _) = event { released } else { nil }
        }
        // (The probe counts when it was still out; a probe that finished at once had left the gate.)
        #expect(answered.count == 1 && answered[0] >= 2, "\(events.seen)")
        // One request per file: the probe's answer was its file, the others went once.
        #expect(server.requests.count == 3, "\(server.requests.map { $0.path })")
        engine.shutdown()
    }
}
