import BAAssetServer
import BADownloadEngine
import BATestSupport
import Foundation
import Testing

/// Transfers that may not use a metered network: held (essential too), others untouched, resumed
/// keeping every byte when let go.
extension EngineTests {
    @Test func meteredHoldPausesAndParksOnlyTransfersThatDisallowIt() async throws {
        let (server, engine, events, directory) = try await fixture()
        let running = bytes(120_000, seed: 8)
        server.setFile("/running.bin", contents: running)
        server.setBehavior(.stall(afterBytes: 50_000), for: "/running.bin")
        server.setFile("/later.bin", contents: bytes(1000, seed: 9))
        server.setFile("/free.bin", contents: bytes(1000, seed: 10))
        // Essential (starts at once) and mid-file when the network becomes metered.
        engine.add(
            DownloadRequest(
                id: "running", url: server.url("/running.bin"), destination: destination(directory, "running.bin"),
                sha256: try sha256(running), isEssential: true, allowsMeteredNetwork: false))
        _ = await events.next { if case .progress(_, let written, _) = $0 { written == 50_000 } else { false } }
        server.setBehavior(nil, for: "/running.bin")
        engine.holdMetered(true)
        guard case .paused(_, let kept) = await events.next(where: { if case .paused = $0 { true } else { false } })
        else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(kept == 50_000)
        // Added while held: parked without a request; one that allows it goes.
        engine.add(
            DownloadRequest(
                id: "later", url: server.url("/later.bin"), destination: destination(directory, "later.bin"),
                allowsMeteredNetwork: false))
        engine.add(
            DownloadRequest(id: "free", url: server.url("/free.bin"), destination: destination(directory, "free.bin")))
        _ = await events.end(of: "free")
        #expect(server.requests(for: "/later.bin").isEmpty)
        #expect(server.requests(for: "/running.bin").count == 1)

        engine.holdMetered(false)
        var ended: [String: DownloadEvent] = [:]
        while ended.count < 2, let event = await events.next(where: { _ in true }) {
            switch event {
            case .finished(let id, _, _, _, _), .failed(let id, _): ended[id] = event
            default: break
            }
        }
        guard case .finished = ended["later"], case .finished(_, _, let size, _, let received) = ended["running"]
        else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(received == size, "nothing downloaded twice")
        #expect(server.requests(for: "/running.bin").last?.header("Range") == "bytes=50000-")
        try await finish(server, engine, directory)
    }
}
