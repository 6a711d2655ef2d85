import BAAssetServer
import BADownloadEngine
import BATestSupport
import Foundation
import Testing

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
}
