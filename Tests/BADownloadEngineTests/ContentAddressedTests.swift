import BAAssetServer
import BATestSupport
import Foundation
import Testing

@testable import BADownloadEngine

/// Content-addressed downloads (issue 34): the owner fixes the bytes (a sink checks them), so a
/// resume needs no validator, and whatever a server answers to a range ends in the right bytes.
@Suite struct ContentAddressedDecisionTests {
    func head(_ status: Int, _ fields: [String: String] = [:]) -> ResponseHead {
        ResponseHead(
            status: status, reason: "",
            fields: Dictionary(uniqueKeysWithValues: fields.map { ($0.key.lowercased(), $0.value) }))
    }
    let url = "http://127.0.0.1:1/f"

    struct Row: CustomStringConvertible, Sendable {
        var name: String
        var status: Int
        var fields: [String: String]
        var requested: Int64
        /// The decision's case: "write@N", "complete", "restart", "fail:CODE", "redirect", "retry".
        var expected: String
        var description: String { name }
    }

    static let rows: [Row] = [
        Row(
            name: "a 206 from the asked offset, no validator", status: 206,
            fields: ["Content-Range": "bytes 100-999/1000"], requested: 100, expected: "write@100"),
        Row(
            name: "a 206 without any validator needs none", status: 206,
            fields: ["Content-Range": "bytes 400-999/1000", "ETag": "\"other\""], requested: 400,
            expected: "write@400"),
        Row(
            name: "a 206 from earlier: written from its start (the kept bytes dropped)", status: 206,
            fields: ["Content-Range": "bytes 0-999/1000"], requested: 100, expected: "write@0"),
        Row(
            name: "a 206 from later: a gap, start again without a range", status: 206,
            fields: ["Content-Range": "bytes 200-999/1000"], requested: 100, expected: "restart"),
        Row(
            name: "a 206 without Content-Range", status: 206, fields: [:], requested: 100, expected: "restart"),
        Row(
            name: "a 206 of another size: another file", status: 206,
            fields: ["Content-Range": "bytes 100-1999/2000"], requested: 100, expected: "fail:sizeMismatch"),
        Row(
            name: "a 200 to a ranged request: read from the start", status: 200,
            fields: ["Content-Length": "1000"], requested: 100, expected: "write@0"),
        Row(
            name: "a 200 of another length", status: 200, fields: ["Content-Length": "999"], requested: 0,
            expected: "fail:sizeMismatch"),
        Row(name: "a 416 at the end: complete", status: 416, fields: [:], requested: 1000, expected: "complete"),
        Row(name: "a 416 elsewhere: start again", status: 416, fields: [:], requested: 100, expected: "restart"),
        Row(
            name: "a redirect is a redirect", status: 302, fields: ["Location": "/g"], requested: 100,
            expected: "redirect"),
        Row(name: "a 503 is retried", status: 503, fields: [:], requested: 100, expected: "retry"),
        Row(name: "a 404 fails", status: 404, fields: [:], requested: 0, expected: "fail:serverStatus"),
    ]

    @Test("each response", arguments: rows)
    func decides(_ row: Row) {
        let decision = ResponseDecision.decideContentAddressed(
            head(row.status, row.fields), requestedOffset: row.requested, expectedSize: 1000, url: url)
        let actual =
            switch decision {
            case .write(let offset, let total, let validator):
                total == 1000 && validator == nil ? "write@\(offset)" : "write \(offset) \(String(describing: total))"
            case .alreadyComplete: "complete"
            case .restartWithoutRange: "restart"
            case .fail(let error): "fail:\(error.code)"
            case .redirect: "redirect"
            case .retry: "retry"
            case .needsCredentials: "credentials"
            }
        #expect(actual == row.expected, "\(row.name): \(decision)")
    }

    @Test("the ordinary rule still wants validators: a 206 without one is not spliced")
    func ordinaryDownloadsKeepTheirRule() {
        let decision = ResponseDecision.decide(
            head(206, ["Content-Range": "bytes 100-999/1000"]), requestedOffset: 100, sentValidator: nil,
            expectedSize: 1000, url: url)
        guard case .restartWithoutRange = decision else {
            Issue.record("\(decision)")
            return
        }
    }

    @Test("the machine resumes content-addressed bytes without a validator, also after a redirect")
    func machineResumesWithoutValidator() {
        var machine = TransferStateMachine(
            url: "http://127.0.0.1:1/f", isForeground: false, allowList: nil, contentAddressed: true)
        #expect(
            machine.start(bytesOnDisk: 500, validator: nil)
                == .startRequest(url: "http://127.0.0.1:1/f", offset: 500, validator: nil))
        let hop = machine.requestEnded(
            .redirect(location: "/g", resolved: "http://127.0.0.1:1/g"), policy: .background, now: .zero,
            random: 0, bytesOnDisk: 700, validator: nil)
        #expect(hop == .startRequest(url: "http://127.0.0.1:1/g", offset: 700, validator: nil))
        let restart = machine.requestEnded(
            .restartWithoutRange(reason: "r"), policy: .background, now: .zero, random: 0, bytesOnDisk: 700,
            validator: nil)
        #expect(restart == .startRequest(url: "http://127.0.0.1:1/g", offset: 0, validator: nil))
        var ordinary = TransferStateMachine(url: "http://127.0.0.1:1/f", isForeground: false, allowList: nil)
        #expect(
            ordinary.start(bytesOnDisk: 500, validator: nil)
                == .startRequest(url: "http://127.0.0.1:1/f", offset: 0, validator: nil))
    }
}

/// A sink that keeps whole units of `unit` bytes of a `size`-byte resource (as a pack's sink
/// keeps whole frames; the last unit may be shorter): what a request's end cuts short is dropped,
/// and a resume asks from the last whole unit.
final class UnitSink: DownloadSink, @unchecked Sendable {
    let unit: Int
    let size: Int
    private let lock = NSLock()
    private var kept: [UInt8] = []
    private var held: [UInt8] = []
    private var notesStorage: [String] = []
    private var finishedStorage = false

    init(unit: Int, size: Int) {
        self.unit = unit
        self.size = size
    }

    var bytes: [UInt8] { lock.withLock { kept } }
    var notes: [String] { lock.withLock { notesStorage } }
    var finished: Bool { lock.withLock { finishedStorage } }

    func rewind() -> Int64 {
        lock.withLock {
            held = []
            return Int64(kept.count)
        }
    }

    func take(_ bytes: UnsafeRawBufferPointer) throws(DownloadError) {
        lock.withLock {
            held.append(contentsOf: bytes)
            let whole = kept.count + held.count == size ? held.count : held.count / unit * unit
            kept.append(contentsOf: held[..<whole])
            held.removeFirst(whole)
        }
    }

    func finish() throws(DownloadError) {
        lock.lock()
        defer { lock.unlock() }
        guard held.isEmpty, kept.count == size else {
            throw DownloadError(.sizeMismatch, "\(kept.count) bytes kept, \(held.count) held, of \(size)")
        }
        finishedStorage = true
    }

    func note(_ message: String) { lock.withLock { notesStorage.append(message) } }
}

extension EngineTests {
    /// Runs one content-addressed download of `contents` at `/c.bin` with `behavior`; returns the
    /// sink, the finished event's received bytes and the server's requests of the file.
    func contentAddressed(
        _ contents: [UInt8], behavior: Behavior?, prepare: (AssetServer) -> Void = { _ in }
    ) async throws -> (UnitSink, Int64?, [RecordedRequest]) {
        let (server, engine, events, directory) = try await fixture()
        server.setFile("/c.bin", contents: contents)
        server.setBehavior(behavior, for: "/c.bin")
        prepare(server)
        let sink = UnitSink(unit: 1000, size: contents.count)
        var request = DownloadRequest(
            id: "c", url: server.url("/c.bin"), destination: destination(directory), expectedSize: Int64(contents.count)
        )
        request.sink = sink
        engine.add(request)
        var received: Int64?
        for _ in 0..<10 {
            let event = await events.next {
                switch $0 {
                case .finished, .failed, .retrying: true
                default: false
                }
            }
            if case .retrying = event {
                server.setBehavior(nil, for: "/c.bin")
                retryNow(engine)
                continue
            }
            if case .finished(_, _, _, _, let bytes) = event {
                received = bytes
            } else {
                Issue.record("\(events.seen)")
            }
            break
        }
        let requests = server.requests(for: "/c.bin")
        #expect(!FileManager.default.fileExists(atPath: destination(directory)), "nothing is written to a file")
        try await finish(server, engine, directory)
        return (sink, received, requests)
    }

    @Test func aCutBodyResumesFromTheSinksKeptBytesWithoutAValidator() async throws {
        let contents = bytes(10_500)
        let (sink, received, requests) = try await contentAddressed(contents, behavior: .dropAfter(bytes: 4_321))
        #expect(sink.finished && sameBytes(sink.bytes, contents))
        #expect(requests.count == 2)
        // Resumed from the last whole unit the sink kept (4,000), with no If-Range.
        #expect(requests.last?.header("range") == "bytes=4000-", "\(requests)")
        #expect(requests.last?.header("if-range") == nil)
        #expect(received == Int64(4_321 + 6_500))
    }

    @Test func aServerThatIgnoresRangeIsReadFromTheStartAndTheKeptBytesDropped() async throws {
        let contents = bytes(10_500)
        // The first request is cut; every answer after it is a 200 of the whole file.
        let (sink, received, _) = try await contentAddressed(contents, behavior: .dropAfter(bytes: 4_321)) { server in
            server.setDefaultBehavior(.ignoreRange)
        }
        #expect(sink.finished && sameBytes(sink.bytes, contents))
        #expect(received == Int64(4_321 + 10_500))
        #expect(
            sink.notes.contains { $0.contains("the first 4000 bytes, kept already, are fetched again") },
            "\(sink.notes)")
    }

    @Test(arguments: [-1_500, 700]) func aWrongRangeEndsInTheRightBytes(shift: Int) async throws {
        let contents = bytes(10_500)
        let (sink, _, requests) = try await contentAddressed(contents, behavior: .dropAfter(bytes: 4_321)) { server in
            server.setDefaultBehavior(.wrongRange(shift: shift))
        }
        #expect(sink.finished && sameBytes(sink.bytes, contents), "\(requests)")
        // From earlier: dropped up to the kept bytes; from later: asked again without a range.
        #expect(requests.count == (shift < 0 ? 2 : 3), "\(requests)")
    }
}
