import BAAssetServer
import BADownloadEngine
import BATestSupport
import Foundation
import Testing

/// Reads an engine's events one at a time.
final class EventReader {
    var iterator: DownloadEvents.AsyncIterator
    var seen: [DownloadEvent] = []

    init(_ engine: DownloadEngine) { iterator = engine.events.makeAsyncIterator() }

    /// The next event that matches, recording everything before it.
    func next(where matches: (DownloadEvent) -> Bool) async -> DownloadEvent? {
        while let event = await iterator.next() {
            seen.append(event)
            if matches(event) { return event }
        }
        return nil
    }

    /// Waits for the transfer to end.
    func end(of id: String) async -> DownloadEvent? {
        await next { event in
            switch event {
            case .finished(let eventID, _, _, _, _), .failed(let eventID, _): eventID == id
            default: false
            }
        }
    }
}

/// Byte-for-byte equality without printing megabytes when it fails.
func sameBytes(_ actual: [UInt8]?, _ expected: [UInt8]) -> Bool { actual == expected }

func bytes(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
}

func sha256(_ data: [UInt8]) throws -> String {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.url.appendingPathComponent("f").path
    try Data(data).write(to: URL(fileURLWithPath: path))
    return try runProcessBlocking("/usr/bin/sha256sum", [path]).stdout.split(separator: " ")[0].lowercased()
}

/// Each test: a real asset server on loopback, a real engine, a temporary folder.
@Suite(.timeLimit(.minutes(1))) struct EngineTests {
    /// Retries wait on `clock`, which only moves when a test calls ``retryNow(_:_:)``: the test
    /// changes the server between attempts without racing the engine.
    let clock = ManualEngineClock()

    func fixture(
        configure: (inout DownloadEngine.Configuration) -> Void = { _ in }
    ) async throws
        -> (AssetServer, DownloadEngine, EventReader, TemporaryDirectory)
    {
        let server = try await AssetServer.start()
        var configuration = DownloadEngine.Configuration()
        configure(&configuration)
        let engine = DownloadEngine(configuration: configuration, clock: clock)
        return (server, engine, EventReader(engine), try TemporaryDirectory())
    }

    /// Waits for the next `.retrying` event and returns it (the engine is then waiting).
    @discardableResult
    func nextRetry(_ events: EventReader) async -> DownloadEvent? {
        await events.next { if case .retrying = $0 { true } else { false } }
    }

    /// Lets the waiting retry happen now.
    func retryNow(_ engine: DownloadEngine) {
        clock.advance(by: .seconds(3600))
        engine.wake()
    }

    func finish(_ server: AssetServer, _ engine: DownloadEngine, _ directory: TemporaryDirectory) async throws {
        engine.shutdown()
        try await server.shutdown()
        directory.remove()
    }

    func destination(_ directory: TemporaryDirectory, _ name: String = "file.bin") -> String {
        directory.url.appendingPathComponent(name).path
    }

    func contents(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { Array($0) } }

    @Test func aPlainDownloadIsVerifiedAndRenamedIntoPlace() async throws {
        let (server, engine, events, directory) = try await fixture()
        let data = bytes(300_000)
        server.setFile("/a.bin", contents: data)
        let digest = try sha256(data)
        engine.add(
            DownloadRequest(
                id: "a", url: server.url("/a.bin"), destination: destination(directory), expectedSize: 300_000,
                sha256: digest))
        let end = await events.end(of: "a")
        #expect(
            end
                == .finished(
                    id: "a", path: destination(directory), size: 300_000, sha256: digest, receivedBytes: 300_000))
        #expect(sameBytes(contents(destination(directory)), data))
        #expect(
            events.seen.contains { if case .validator(_, let value) = $0 { value.hasPrefix("\"") } else { false } },
            "the ETag is reported for persistence")
        #expect(
            !FileManager.default.fileExists(atPath: DownloadRequest.defaultPartialPath(for: destination(directory))))
        #expect(
            !FileManager.default.fileExists(
                atPath: DownloadRequest.defaultPartialPath(for: destination(directory)) + ".validator"))
        try await finish(server, engine, directory)
    }

    /// How a transfer recovered from a first attempt that misbehaved.
    struct Recovery {
        var end: DownloadEvent?
        var file: [UInt8]?
        var requests: [RecordedRequest]
    }

    /// Serves `data` at `path` misbehaving with `first`; once the engine waits to retry, calls
    /// `between` (to change the server) and lets the retry run; returns how it ended.
    func recover(
        _ data: [UInt8], at path: String, first: Behavior, verify: Bool = true, between: (AssetServer) -> Void
    ) async throws -> Recovery {
        let (server, engine, events, directory) = try await fixture()
        server.setFile(path, contents: data)
        server.setBehavior(first, for: path)
        engine.add(
            DownloadRequest(
                id: path, url: server.url(path), destination: destination(directory),
                sha256: verify ? try sha256(data) : nil))
        await nextRetry(events)
        between(server)
        retryNow(engine)
        let end = await events.end(of: path)
        let recovery = Recovery(end: end, file: contents(destination(directory)), requests: server.requests(for: path))
        try await finish(server, engine, directory)
        return recovery
    }

    @Test func aDroppedConnectionResumesWithAValidatedRange() async throws {
        let data = bytes(400_000)
        let recovery = try await recover(data, at: "/drop.bin", first: .dropAfter(bytes: 100_000)) {
            $0.setBehavior(nil, for: "/drop.bin")
        }
        guard case .finished(_, _, let size, _, let received) = recovery.end else {
            Issue.record("\(String(describing: recovery.end))")
            return
        }
        #expect(size == 400_000)
        #expect(received == 400_000, "nothing fetched twice")
        #expect(sameBytes(recovery.file, data))
        let second = try #require(recovery.requests.last)
        #expect(second.header("Range") == "bytes=100000-")
        #expect(second.header("If-Range") != nil)
    }

    @Test func aServerThatIgnoresRangeRestartsIntoAFreshFile() async throws {
        let data = bytes(300_000, seed: 3)
        let recovery = try await recover(data, at: "/ignore.bin", first: .dropAfter(bytes: 50_000)) {
            $0.setBehavior(.ignoreRange, for: "/ignore.bin")
        }
        guard case .finished(_, _, _, _, let received) = recovery.end else {
            Issue.record("\(String(describing: recovery.end))")
            return
        }
        #expect(sameBytes(recovery.file, data), "no splice of a 200 body onto the partial file")
        #expect(received == 350_000, "the prefix plus the whole file again")
    }

    @Test func aNewVersionBetweenAttemptsIsNeverSpliced() async throws {
        let new = bytes(300_000, seed: 2)
        let recovery = try await recover(
            bytes(300_000, seed: 1), at: "/v.bin", first: .dropAfter(bytes: 100_000), verify: false
        ) {
            $0.replaceFile("/v.bin", contents: new)
            $0.setBehavior(nil, for: "/v.bin")
        }
        #expect(
            sameBytes(recovery.file, new), "If-Range did not match: the whole new version, not old prefix + new tail")
    }

    /// A server that honours `Range` but ignores `If-Range` after the file changed: the 206 carries
    /// the new version's validator, so the new bytes are never appended to the old ones, whether
    /// the partial file's validator is a strong ETag or only a `Last-Modified` date.
    @Test("a 206 of another version is never spliced, for each validator kind", arguments: [false, true])
    func aServerIgnoringIfRangeIsCaught(lastModifiedOnly: Bool) async throws {
        let (server, engine, events, directory) = try await fixture()
        let new = bytes(300_000, seed: 4)
        server.setFile("/v.bin", contents: new)
        server.setBehavior(.ignoreIfRange(lastModifiedOnly: lastModifiedOnly), for: "/v.bin")
        // What an earlier process left: 100 000 bytes of the old version and its validator.
        let target = destination(directory)
        let partial = DownloadRequest.defaultPartialPath(for: target)
        try FileManager.default.createDirectory(
            atPath: (partial as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: partial, contents: Data(bytes(100_000, seed: 3))))
        let old = lastModifiedOnly ? "Sun, 06 Nov 1994 08:49:37 GMT" : "\"old-version\""
        try old.write(toFile: partial + ".validator", atomically: true, encoding: .utf8)

        engine.add(DownloadRequest(id: "v", url: server.url("/v.bin"), destination: target))
        guard case .finished = await events.end(of: "v") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(
            sameBytes(contents(target), new), "old prefix + new tail spliced (lastModifiedOnly: \(lastModifiedOnly))")
        let requests = server.requests(for: "/v.bin")
        #expect(requests.first?.header("If-Range") == old, "\(requests)")
        try await finish(server, engine, directory)
    }

    /// The lying server of issue 19: the connection drops mid-body, the file changes, and the
    /// server ignores `If-Range`, answering 206 with the new version's bytes and validators that
    /// do not repeat the partial file's — (a) none after a Last-Modified resume, (b) only a
    /// Last-Modified after an ETag resume, (c) the weak `W/"v1"` after the strong `"v1"`, (d) the
    /// same ETag with a new Last-Modified. Each time the file starts over: the new version whole.
    @Test("a 206 that does not repeat every validator starts the file over", arguments: ValidatorLie.all)
    func aLyingPartialContentIsNeverSpliced(bait: ValidatorLie) async throws {
        let new = bytes(300_000, seed: 5)
        let recovery = try await recover(
            bytes(300_000, seed: 6), at: "/liar.bin",
            first: .switchVersionAfterDrop(
                dropAfter: 100_000, before: bait.before, after: bait.after, newContents: new),
            verify: false
        ) { _ in }
        guard case .finished(_, _, _, _, let received) = recovery.end else {
            Issue.record("\(bait.name): \(String(describing: recovery.end))")
            return
        }
        let whole = sameBytes(recovery.file, new)
        #expect(whole, "\(bait.name): old prefix + new tail spliced")
        #expect(received == 100_000 + 300_000, "\(bait.name): the cut, then the new file (the 206 is not read)")
        let requests = recovery.requests
        #expect(requests.count == 3, "\(bait.name): \(requests)")
        #expect(requests.dropFirst().first?.header("If-Range") == bait.ifRange, "\(bait.name)")
        #expect(requests.last?.header("Range") == nil, "\(bait.name): the file starts over")
    }

    @Test func changingETagsOnEveryRequestStillEndCorrect() async throws {
        let data = bytes(200_000, seed: 9)
        let recovery = try await recover(data, at: "/etag.bin", first: .dropAfter(bytes: 60_000)) {
            $0.setBehavior(.changeETagEachRequest, for: "/etag.bin")
        }
        guard case .finished = recovery.end else {
            Issue.record("\(String(describing: recovery.end))")
            return
        }
        #expect(sameBytes(recovery.file, data))
    }

    @Test func aDeclaredLengthOtherThanExpectedFailsSayingSo() async throws {
        let (server, engine, events, directory) = try await fixture()
        server.setFile("/lie.bin", contents: bytes(10_000))
        server.setBehavior(.lieAboutLength(declared: 20_000), for: "/lie.bin")
        engine.add(
            DownloadRequest(
                id: "l", url: server.url("/lie.bin"), destination: destination(directory), expectedSize: 10_000))
        guard case .failed(_, let error) = await events.end(of: "l") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(error.code == .sizeMismatch)
        #expect(error.message.contains("declared 20000 bytes, expected 10000"))
        #expect(!FileManager.default.fileExists(atPath: destination(directory)))
        try await finish(server, engine, directory)
    }

    @Test func aShortBodyUnderALongerLengthIsResumedToTheRealEnd() async throws {
        let data = bytes(10_000)
        let recovery = try await recover(data, at: "/short.bin", first: .lieAboutLength(declared: 20_000)) {
            $0.setBehavior(nil, for: "/short.bin")
        }
        guard case .finished = recovery.end else {
            Issue.record("\(String(describing: recovery.end))")
            return
        }
        #expect(sameBytes(recovery.file, data))
    }

    @Test func aServerSendingFewerBytesThanExpectedFails() async throws {
        let (server, engine, events, directory) = try await fixture()
        server.setFile("/fewer.bin", contents: bytes(5_000))
        engine.add(
            DownloadRequest(
                id: "f", url: server.url("/fewer.bin"), destination: destination(directory), expectedSize: 6_000))
        guard case .failed(_, let error) = await events.end(of: "f") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(error.code == .sizeMismatch)
        try await finish(server, engine, directory)
    }

    @Test func aWrongChecksumFailsAndDeliversNothing() async throws {
        let (server, engine, events, directory) = try await fixture()
        server.setFile("/sum.bin", contents: bytes(1000))
        engine.add(
            DownloadRequest(
                id: "c", url: server.url("/sum.bin"), destination: destination(directory),
                sha256: String(repeating: "0", count: 64)))
        guard case .failed(_, let error) = await events.end(of: "c") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(error.code == .checksumMismatch)
        #expect(!FileManager.default.fileExists(atPath: destination(directory)))
        try await finish(server, engine, directory)
    }

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
