import BAAssetServer
import BADownloadEngine
import BATestSupport
import Foundation
import Testing

/// Promotion, the order and bounds of the queue, restrictions, partial files and cancelling.
extension EngineTests {
    @Test func promotionKeepsEveryByte() async throws {
        let (server, engine, events, directory) = try await fixture()
        let data = bytes(120_000, seed: 5)
        server.setFile("/big.bin", contents: data)
        // The first request stops sending after 50,000 bytes (and stays open), so the transfer is
        // certainly running, mid-file, when it is promoted.
        server.setBehavior(.stall(afterBytes: 50_000), for: "/big.bin")
        engine.add(
            DownloadRequest(
                id: "p", url: server.url("/big.bin"), destination: destination(directory), sha256: try sha256(data)))
        _ = await events.next { if case .progress(_, let written, _) = $0 { written == 50_000 } else { false } }
        server.setBehavior(nil, for: "/big.bin")
        engine.promote("p")
        guard case .paused(_, let kept) = await events.next(where: { if case .paused = $0 { true } else { false } })
        else {
            Issue.record("\(events.seen)")
            return
        }
        guard
            case .began(_, let offset, let foreground) = await events.next(where: {
                if case .began = $0 { true } else { false }
            })
        else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(kept == 50_000 && offset == kept && foreground)
        guard case .finished(_, _, let size, _, let received) = await events.end(of: "p") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(received == size, "bytes before promotion + after = file size: nothing downloaded twice")
        #expect(sameBytes(contents(destination(directory)), data))
        #expect(server.requests(for: "/big.bin").last?.header("Range") == "bytes=50000-")
        try await finish(server, engine, directory)
    }

    @Test func backgroundOrderIsPriorityThenArrival() async throws {
        let (server, engine, events, directory) = try await fixture { $0.backgroundConcurrency = 1 }
        server.setFile("/slot.bin", contents: bytes(1000))
        server.setBehavior(.stall(afterBytes: 10), for: "/slot.bin")
        for name in ["low", "high", "low2"] { server.setFile("/\(name).bin", contents: bytes(100)) }
        engine.add(
            DownloadRequest(id: "slot", url: server.url("/slot.bin"), destination: destination(directory, "slot.bin")))
        _ = await events.next { if case .began(let id, _, _) = $0 { id == "slot" } else { false } }
        for (name, priority) in [("low", 10), ("high", 90), ("low2", 10)] {
            engine.add(
                DownloadRequest(
                    id: name, url: server.url("/\(name).bin"), destination: destination(directory, "\(name).bin"),
                    priority: Int64(priority)))
        }
        engine.cancel("slot")
        _ = await events.end(of: "low2")
        let began = events.seen.compactMap { if case .began(let id, _, _) = $0 { id } else { nil } }
        #expect(began == ["slot", "high", "low", "low2"])
        try await finish(server, engine, directory)
    }

    @Test func essentialStartsAtOnceOutsideTheBoundAndTakesNothingFromOthers() async throws {
        let (server, engine, events, directory) = try await fixture { $0.backgroundConcurrency = 1 }
        let slotData = bytes(1000, seed: 2)
        server.setFile("/slot.bin", contents: slotData)
        server.setBehavior(.stall(afterBytes: 400), for: "/slot.bin")
        server.setFile("/queued.bin", contents: bytes(100, seed: 3))
        let essentialData = bytes(200_000, seed: 4)
        server.setFile("/essential.bin", contents: essentialData)
        engine.add(
            DownloadRequest(id: "slot", url: server.url("/slot.bin"), destination: destination(directory, "slot.bin")))
        _ = await events.next {
            if case .progress(let id, let written, _) = $0 { id == "slot" && written == 400 } else { false }
        }
        engine.add(
            DownloadRequest(
                id: "queued", url: server.url("/queued.bin"), destination: destination(directory, "queued.bin"),
                priority: 1000))
        engine.add(
            DownloadRequest(
                id: "essential", url: server.url("/essential.bin"),
                destination: destination(directory, "essential.bin"), expectedSize: 200_000, priority: 0,
                isEssential: true))
        guard case .finished(_, _, _, _, let received) = await events.end(of: "essential") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(received == 200_000)
        #expect(sameBytes(contents(destination(directory, "essential.bin")), essentialData))
        // The running background transfer kept its slot and its bytes; the queued one still waits for it.
        let began = events.seen.compactMap { if case .began(let id, _, _) = $0 { id } else { nil } }
        #expect(began == ["slot", "essential"], "\(events.seen)")
        #expect(!events.seen.contains { if case .paused = $0 { true } else { false } })
        #expect(server.requests(for: "/slot.bin").count == 1)
        #expect(server.requests(for: "/queued.bin").isEmpty)
        server.setBehavior(nil, for: "/slot.bin")
        engine.cancel("slot")
        guard case .finished = await events.end(of: "queued") else {
            Issue.record("\(events.seen)")
            return
        }
        try await finish(server, engine, directory)
    }

    @Test func liftedRestrictionsLetAQueuedTransferPassItsLimitAndHost() async throws {
        let (server, engine, events, directory) = try await fixture { $0.backgroundConcurrency = 1 }
        server.setFile("/slot.bin", contents: bytes(1000))
        server.setBehavior(.stall(afterBytes: 10), for: "/slot.bin")
        let big = bytes(5000, seed: 5)
        server.setFile("/big.bin", contents: big)
        server.setFile("/moved.bin", contents: big)
        let port = try #require(URL(string: server.url("/"))?.port)
        server.setBehavior(.redirect(to: "http://localhost:\(port)/big.bin"), for: "/moved.bin")
        engine.add(
            DownloadRequest(id: "slot", url: server.url("/slot.bin"), destination: destination(directory, "slot.bin")))
        _ = await events.next { if case .began(let id, _, _) = $0 { id == "slot" } else { false } }
        // Each would fail: big declares 5000 bytes over a limit of 100 (allowanceDisallowed), moved
        // redirects to a host outside its allow-list (notAllowed).
        let allowList = HostAllowList(["127.0.0.1"])
        engine.add(
            DownloadRequest(
                id: "big", url: server.url("/big.bin"), destination: destination(directory, "big.bin"), byteLimit: 100,
                allowList: allowList))
        engine.add(
            DownloadRequest(
                id: "moved", url: server.url("/moved.bin"), destination: destination(directory, "moved.bin"),
                byteLimit: 100, allowList: allowList))
        engine.liftRestrictions("big")
        engine.liftRestrictions("moved")
        engine.cancel("slot")
        for id in ["big", "moved"] {
            guard case .finished(_, let path, let size, _, _) = await events.end(of: id) else {
                Issue.record("\(id): \(events.seen)")
                return
            }
            #expect(size == 5000)
            #expect(sameBytes(contents(path), big))
        }
        try await finish(server, engine, directory)
    }

    @Test func foregroundStartsAtOnceOutsideTheBound() async throws {
        let (server, engine, events, directory) = try await fixture { $0.backgroundConcurrency = 1 }
        server.setFile("/slot.bin", contents: bytes(1000))
        server.setBehavior(.stall(afterBytes: 10), for: "/slot.bin")
        server.setFile("/now.bin", contents: bytes(100))
        engine.add(
            DownloadRequest(id: "slot", url: server.url("/slot.bin"), destination: destination(directory, "slot.bin")))
        engine.add(
            DownloadRequest(
                id: "now", url: server.url("/now.bin"), destination: destination(directory, "now.bin"),
                isForeground: true))
        guard case .finished = await events.end(of: "now") else {
            Issue.record("\(events.seen)")
            return
        }
        try await finish(server, engine, directory)
    }

    @Test func aPartialFileSurvivesTheEngineAndIsResumed() async throws {
        let server = try await AssetServer.start()
        let directory = try TemporaryDirectory()
        let data = bytes(300_000, seed: 6)
        server.setFile("/r.bin", contents: data)
        server.setBehavior(.stall(afterBytes: 120_000), for: "/r.bin")
        let request = DownloadRequest(
            id: "r", url: server.url("/r.bin"), destination: destination(directory), sha256: try sha256(data))
        do {
            let first = DownloadEngine()
            let events = EventReader(first)
            first.add(request)
            _ = await events.next { if case .progress(_, let written, _) = $0 { written > 0 } else { false } }
            first.shutdown()  // like a process that ends: the partial file and its validator stay
        }
        let kept = Int64((try FileManager.default.attributesOfItem(atPath: request.partialPath)[.size] as? Int) ?? 0)
        #expect(kept > 0)
        #expect(FileManager.default.fileExists(atPath: request.partialPath + ".validator"))
        server.setBehavior(nil, for: "/r.bin")
        let second = DownloadEngine()
        let events = EventReader(second)
        second.add(request)
        guard case .finished(_, _, _, _, let received) = await events.end(of: "r") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(received == 300_000 - kept, "only the missing part")
        #expect(sameBytes(contents(destination(directory)), data))
        #expect(server.requests(for: "/r.bin").last?.header("Range") == "bytes=\(kept)-")
        second.shutdown()
        try await server.shutdown()
        directory.remove()
    }

    @Test func twoDownloadsToOneDestinationAreRefused() async throws {
        let (server, engine, events, directory) = try await fixture()
        server.setFile("/one.bin", contents: bytes(1000))
        server.setBehavior(.stall(afterBytes: 10), for: "/one.bin")
        engine.add(DownloadRequest(id: "first", url: server.url("/one.bin"), destination: destination(directory)))
        engine.add(DownloadRequest(id: "second", url: server.url("/one.bin"), destination: destination(directory)))
        guard case .failed(_, let error) = await events.end(of: "second") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(error.code == .fileSystem && error.message.contains("'first'"))
        try await finish(server, engine, directory)
    }

    @Test func cancelRemovesThePartialFile() async throws {
        let (server, engine, events, directory) = try await fixture()
        server.setFile("/c.bin", contents: bytes(100_000))
        server.setBehavior(.stall(afterBytes: 50_000), for: "/c.bin")
        engine.add(DownloadRequest(id: "c", url: server.url("/c.bin"), destination: destination(directory)))
        _ = await events.next { if case .progress(_, let written, _) = $0 { written > 0 } else { false } }
        engine.cancel("c")
        guard case .failed(_, let error) = await events.end(of: "c") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(error.code == .cancelled)
        #expect(
            !FileManager.default.fileExists(atPath: DownloadRequest.defaultPartialPath(for: destination(directory))))
        try await finish(server, engine, directory)
    }
}
