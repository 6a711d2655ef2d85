import BAAssetServer
import BADownloadEngine
import BATestSupport
import Foundation
import Testing

/// Retries, statuses, credentials, stalls, redirects and the URL rules.
extension EngineTests {
    @Test func retryAfterIsHonouredOnTheInjectedClock() async throws {
        let (server, engine, events, directory) = try await fixture()
        server.setFile("/busy.bin", contents: bytes(1000))
        server.setBehavior(.status(503, retryAfter: "120", times: 1), for: "/busy.bin")
        engine.add(DownloadRequest(id: "b", url: server.url("/busy.bin"), destination: destination(directory)))
        guard
            case .retrying(_, let attempt, let delay, let reason) = await events.next(where: {
                if case .retrying = $0 { true } else { false }
            })
        else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(attempt == 1 && delay == .seconds(120))
        #expect(reason.contains("503"))
        #expect(server.requests(for: "/busy.bin").count == 1, "nothing until the clock says so")
        clock.advance(by: .seconds(120))
        engine.wake()
        guard case .finished = await events.end(of: "b") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(server.requests(for: "/busy.bin").count == 2)
        try await finish(server, engine, directory)
    }

    @Test(arguments: [429, 500, 408]) func transientStatusesAreRetried(status: Int) async throws {
        let (server, engine, events, directory) = try await fixture()
        server.setFile("/t.bin", contents: bytes(1000))
        server.setBehavior(.status(status, times: 2), for: "/t.bin")
        engine.add(DownloadRequest(id: "t", url: server.url("/t.bin"), destination: destination(directory)))
        for _ in 0..<2 {
            await nextRetry(events)
            retryNow(engine)
        }
        guard case .finished = await events.end(of: "t") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(server.requests(for: "/t.bin").count == 3)
        try await finish(server, engine, directory)
    }

    @Test func notFoundFailsWithTheStatus() async throws {
        let (server, engine, events, directory) = try await fixture()
        engine.add(DownloadRequest(id: "n", url: server.url("/missing.bin"), destination: destination(directory)))
        guard case .failed(_, let error) = await events.end(of: "n") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(error.httpStatus == 404 && error.message.contains("404"))
        #expect(
            !FileManager.default.fileExists(atPath: DownloadRequest.defaultPartialPath(for: destination(directory))))
        try await finish(server, engine, directory)
    }

    @Test func credentialsAreAskedForThenUsed() async throws {
        let (server, engine, events, directory) = try await fixture()
        server.setFile("/secret.bin", contents: bytes(2000))
        server.setBehavior(.requireBasicAuth(user: "u", password: "p"), for: "/secret.bin")
        engine.add(DownloadRequest(id: "s", url: server.url("/secret.bin"), destination: destination(directory)))
        guard
            case .needsCredentials(_, let challenge) = await events.next(where: {
                if case .needsCredentials = $0 { true } else { false }
            })
        else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(challenge.contains("Basic"))
        engine.respond(to: "s", with: .useCredential(.init(user: "u", password: "p")))
        guard case .finished = await events.end(of: "s") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(server.requests(for: "/secret.bin").last?.header("Authorization")?.hasPrefix("Basic ") == true)

        engine.add(
            DownloadRequest(
                id: "w", url: server.url("/secret.bin"), destination: destination(directory, "w.bin"),
                credential: .init(user: "u", password: "wrong")))
        guard case .failed(_, let error) = await events.end(of: "w") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(error.code == .authentication)
        try await finish(server, engine, directory)
    }

    /// The reason said "after 65306361 bytes", the partial file's size, read as this attempt's.
    @Test func aRetryReasonSaysThisRequestsBytesAndThePartialFilesApart() async throws {
        let (server, engine, events, directory) = try await fixture()
        server.setFile("/cut.bin", contents: bytes(10_000, seed: 6))
        server.setBehavior(.dropAfter(bytes: 3000), for: "/cut.bin")
        engine.add(DownloadRequest(id: "c", url: server.url("/cut.bin"), destination: destination(directory)))
        var reasons: [String] = []
        for attempt in 1...2 {
            guard case .retrying(_, _, _, let reason) = await nextRetry(events) else {
                Issue.record("\(events.seen)")
                return
            }
            reasons.append(reason)
            if attempt == 2 { server.setBehavior(nil, for: "/cut.bin") }
            retryNow(engine)
        }
        #expect(reasons[0].hasSuffix(" after 3000 bytes of this request (partial file: 3000 bytes)"), "\(reasons)")
        #expect(reasons[1].hasSuffix(" after 3000 bytes of this request (partial file: 6000 bytes)"), "\(reasons)")
        guard case .finished = await events.end(of: "c") else {
            Issue.record("\(events.seen)")
            return
        }
        try await finish(server, engine, directory)
    }

    @Test func aStalledTransferIsDetectedAndResumed() async throws {
        let (server, engine, events, directory) = try await fixture { $0.stallTimeout = .seconds(30) }
        let data = bytes(200_000, seed: 4)
        server.setFile("/stall.bin", contents: data)
        server.setBehavior(.stall(afterBytes: 80_000), for: "/stall.bin")
        engine.add(
            DownloadRequest(
                id: "st", url: server.url("/stall.bin"), destination: destination(directory), sha256: try sha256(data)))
        _ = await events.next { if case .progress(_, let written, _) = $0 { written > 0 } else { false } }
        // No byte for 30 s of engine time: a stall, whatever the connection says.
        clock.advance(by: .seconds(31))
        engine.wake()
        guard case .retrying(_, _, _, let reason) = await nextRetry(events) else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(reason.contains("no data for"), "\(reason)")
        server.setBehavior(nil, for: "/stall.bin")
        retryNow(engine)
        guard case .finished(_, _, _, _, let received) = await events.end(of: "st") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(received == 200_000, "the stalled prefix is kept")
        #expect(sameBytes(contents(destination(directory)), data))
        try await finish(server, engine, directory)
    }

    @Test func redirectsAreFollowedAndEveryHopIsChecked() async throws {
        let (server, engine, events, directory) = try await fixture()
        server.setFile("/real.bin", contents: bytes(500))
        server.setBehavior(.redirect(to: "/real.bin"), for: "/moved.bin")
        engine.add(
            DownloadRequest(
                id: "r", url: server.url("/moved.bin"), destination: destination(directory),
                allowList: HostAllowList(["127.0.0.1"])))
        guard case .finished = await events.end(of: "r") else {
            Issue.record("\(events.seen)")
            return
        }

        // The same server under another name is another host: not in the allow-list.
        server.setBehavior(.redirect(to: "http://localhost:\(server.port)/real.bin"), for: "/away.bin")
        engine.add(
            DownloadRequest(
                id: "x", url: server.url("/away.bin"), destination: destination(directory, "x.bin"),
                allowList: HostAllowList(["127.0.0.1"])))
        guard case .failed(_, let error) = await events.end(of: "x") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(error.code == .notAllowed)
        #expect(error.message.contains("redirect hop 1") && error.message.contains("localhost"), "\(error.message)")
        #expect(server.requests(for: "/real.bin").count == 1, "the refused hop was never fetched")
        try await finish(server, engine, directory)
    }

    @Test func urlsOutsideTheRulesAreRefusedBeforeAnyRequest() async throws {
        let (server, engine, events, directory) = try await fixture()
        engine.add(DownloadRequest(id: "h", url: "http://example.com/a.bin", destination: destination(directory)))
        guard case .failed(_, let error) = await events.end(of: "h") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(error.code == .notAllowed && error.message.contains("plain http"))
        engine.add(
            DownloadRequest(
                id: "d", url: server.url("/a.bin"), destination: destination(directory),
                allowList: HostAllowList(["cdn.example.com"])))
        guard case .failed(_, let denied) = await events.end(of: "d") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(denied.code == .notAllowed)
        #expect(server.requests.isEmpty)
        try await finish(server, engine, directory)
    }
}
