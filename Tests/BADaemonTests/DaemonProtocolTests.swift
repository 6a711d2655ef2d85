import BACore
import BATestSupport
import Foundation
import Testing

@testable import BADaemon
@testable import BADaemonProtocol

@Suite("BADaemonProtocol codec")
struct DaemonProtocolTests {
    static let clientMessages: [ClientMessage] = [
        ClientMessage(
            id: 1,
            request: .hello(
                protocolVersion: 1, client: ClientInfo(role: .app, bundleIdentifier: "com.example.game", pid: 42))),
        ClientMessage(id: 2, request: .status),
        ClientMessage(
            id: 3,
            request: .schedule(
                DownloadDescription(
                    identifier: "level-1", url: "https://cdn.example.com/level-1.pak",
                    headers: [.init(name: "Authorization", value: "Bearer x")],
                    applicationGroupIdentifier: "group.example",
                    priority: 10, isEssential: true, fileSize: 1234, sha256: String(repeating: "a", count: 64)))),
        ClientMessage(id: 4, request: .startForeground(identifier: "level-1")),
        ClientMessage(id: 5, request: .cancel(identifier: "level-1")),
        ClientMessage(id: 6, request: .currentDownloads),
        ClientMessage(id: UInt64.max, request: .acknowledgeEvents(throughSequence: 77)),
        ClientMessage(id: 7, request: .listDownloads(app: "com.example.game")),
        ClientMessage(id: 8, request: .listDownloads(states: ["failed", "active"], limit: 0)),
    ]

    static let serverMessages: [ServerMessage] = {
        let event = DownloadEvent(
            sequence: 5, downloadUniqueIdentifier: "U", identifier: "level-1",
            change: .progress(bytesWritten: 10, totalBytes: 100))
        return [
            .response(requestId: 1, result: .ok),
            .response(
                requestId: 2,
                result: .status(
                    StatusInfo(
                        protocolVersion: 1, daemonVersion: "0.1.0", pid: 9, uptimeSeconds: 1.5, connections: 2,
                        registeredApps: 3, activeDownloads: 4))),
            .response(
                requestId: 3,
                result: .downloads([
                    DownloadInfo(
                        uniqueIdentifier: "U", download: DownloadDescription(identifier: "a", url: "https://x/a"),
                        state: .waiting,
                        isForeground: false, bytesOnDisk: 0)
                ])),
            .response(requestId: 4, result: .error(code: 55, message: "no")),
            .response(requestId: 5, result: .downloadList(DownloadListing(downloads: [], notShown: 99_000))),
            .event(event),
        ]
    }()

    @Test("every client message survives a round trip through a frame", arguments: clientMessages)
    func clientRoundTrip(message: ClientMessage) throws {
        var reader = FrameReader()
        reader.append(try DaemonProtocol.encode(message))
        let payload = try #require(try reader.nextFrame())
        #expect(try DaemonProtocol.decodeClientMessage(payload) == message)
        #expect(reader.bufferedCount == 0)
    }

    @Test("every server message survives a round trip through a frame", arguments: serverMessages)
    func serverRoundTrip(message: ServerMessage) throws {
        let frame = try DaemonProtocol.encode(message)
        #expect(try DaemonProtocol.decodeServerMessage(frame.dropFirst(4)) == message)
    }

    @Test("listDownloads without the new fields is the request of older clients; a downloadList in parts joins back")
    func listings() throws {
        let old = Data(#"{"id":7,"type":"listDownloads","app":"com.example.game"}"#.utf8)
        #expect(
            try DaemonProtocol.decodeClientMessage(old)
                == ClientMessage(id: 7, request: .listDownloads(app: "com.example.game", states: nil, limit: nil)))

        let infos = (0..<2_500).map {
            DownloadInfo(
                uniqueIdentifier: "U\($0)", download: DownloadDescription(identifier: "d\($0)", url: "https://x/\($0)"),
                state: .waiting, isForeground: false, bytesOnDisk: 0)
        }
        let listing = ServerMessage.Result.downloadList(DownloadListing(downloads: infos, notShown: 7))
        // A page that is not the last: every frame partial. The last page: only its last frame is the response.
        let page = try ServerMessage.Result.downloadList(DownloadListing(downloads: infos)).frames(
            requestId: 9, last: false
        ).map {
            try DaemonProtocol.decodeServerMessage($0.dropFirst(4))
        }
        let last = try listing.frames(requestId: 9).map { try DaemonProtocol.decodeServerMessage($0.dropFirst(4)) }
        func part(_ message: ServerMessage) -> ServerMessage.Result? {
            if case .partialResponse(9, let result) = message { return result }
            return nil
        }
        #expect(page.count == 3 && page.allSatisfy { part($0) != nil })
        #expect(last.count == 3 && last.dropLast().allSatisfy { part($0) != nil })
        guard case .response(9, let final) = last.last else { throw ListingsError() }
        #expect(
            ServerMessage.Result.joined(page.compactMap(part) + last.dropLast().compactMap(part) + [final])
                == .downloadList(DownloadListing(downloads: infos + infos, notShown: 7)))
        #expect(
            ServerMessage.Result.joined([.downloads(Array(infos[..<10])), .error(code: 1004, message: "x")])
                == .error(code: 1004, message: "x"))
        #expect(DownloadListing.stateNames == ["created", "waiting", "downloading", "finished", "failed"])
        #expect(try DownloadListing.states(["active", "failed"]) == [.created, .waiting, .downloading, .failed])
        #expect(throws: UnknownDownloadState(name: "paused")) {
            try DownloadListing.states(["waiting", "paused"])
        }
    }

    struct ListingsError: Error {}

    /// Issue 12: `ba install` of an extension returning 8,000 downloads (the bound is 10,000)
    /// ended "lost the connection": its run report was one frame over the cap.
    @Test("an extension run's report of 8,000 scheduled and 2,000 refused downloads goes in parts under the cap")
    func longRunReport() throws {
        var report = ExtensionRunReport(bundleIdentifier: "com.example.game", version: "1")
        report.scheduled = (0..<8_000).map {
            DownloadInfo(
                uniqueIdentifier: "U\($0)",
                download: DownloadDescription(
                    identifier: "asset-\($0)", url: "https://cdn.example.com/assets/\($0).pak"),
                state: .waiting, isForeground: false, bytesOnDisk: 0)
        }
        report.refused = (0..<2_000).map {
            RefusedDownload(identifier: "r\($0)", code: 112, reason: "over the allowance", isEssential: false)
        }
        report.logs = ["returned 10000 downloads"]
        let frames = try ServerMessage.Result.extensionRun(report).frames(requestId: 4)
        #expect(frames.count > 1)
        #expect(frames.allSatisfy { $0.count - 4 <= DaemonProtocol.maximumFrameLength })
        var parts: [ServerMessage.Result] = []
        for frame in frames {
            switch try DaemonProtocol.decodeServerMessage(frame.dropFirst(4)) {
            case .partialResponse(4, let part), .response(4, let part): parts.append(part)
            default: Issue.record("a frame that is not part of answer 4")
            }
        }
        #expect(ServerMessage.Result.joined(parts) == .extensionRun(report))
    }

    /// Issue 19: an extension that logged long lines made the run report exceed the frame cap
    /// (`ba install` exited 31, "lost the connection"). The log lines go in parts too, and a part
    /// that is still too large (lines of control characters, six bytes each in JSON) is cut.
    @Test("a run report of 1,000 log lines of 2,000 escaped bytes goes in parts under the cap")
    func longLogsInParts() throws {
        var report = ExtensionRunReport(bundleIdentifier: "com.example.game", version: "1")
        report.scheduled = (0..<10).map {
            DownloadInfo(
                uniqueIdentifier: "U\($0)",
                download: DownloadDescription(
                    identifier: "asset-\($0)", url: "https://cdn.example.com/assets/\($0).pak"),
                state: .waiting, isForeground: false, bytesOnDisk: 0)
        }
        report.logs = (0..<1_000).map { "line \($0) " + String(repeating: "\u{1}", count: 2_000) }
        report.verdict = "ok"
        let frames = try ServerMessage.Result.extensionRun(report).frames(requestId: 5)
        #expect(frames.count > 1)
        #expect(frames.allSatisfy { $0.count - 4 <= DaemonProtocol.maximumFrameLength })
        var parts: [ServerMessage.Result] = []
        for frame in frames {
            switch try DaemonProtocol.decodeServerMessage(frame.dropFirst(4)) {
            case .partialResponse(5, let part), .response(5, let part): parts.append(part)
            default: Issue.record("a frame that is not part of answer 5")
            }
        }
        #expect(ServerMessage.Result.joined(parts) == .extensionRun(report))
    }

    @Test("the wire shape is the documented flat JSON")
    func wireShape() throws {
        let frame = try DaemonProtocol.encode(ClientMessage(id: 2, request: .status))
        #expect(frame.prefix(4) == [0, 0, 0, UInt8(frame.count - 4)])
        #expect(String(decoding: frame.dropFirst(4), as: UTF8.self) == #"{"id":2,"type":"status"}"#)
        let reply = try DaemonProtocol.encode(ServerMessage.response(requestId: 2, result: .ok))
        #expect(
            String(decoding: reply.dropFirst(4), as: UTF8.self) == #"{"id":2,"result":{"type":"ok"},"type":"response"}"#
        )
    }

    @Test(
        "events keep version 1's flat JSON: the change's fields beside the event's, a failure's as errorDomain/errorCode/errorMessage"
    )
    func eventWireShape() throws {
        let failed = DownloadEvent(
            sequence: 3, downloadUniqueIdentifier: "U", identifier: "a",
            change: .failed(domain: "NSURLErrorDomain", code: -999, message: "cancelled"), appIdentifier: "com.x")
        let text = String(decoding: try DaemonProtocol.encode(ServerMessage.event(failed)).dropFirst(4), as: UTF8.self)
        #expect(
            text
                == #"{"event":{"appIdentifier":"com.x","downloadUniqueIdentifier":"U","errorCode":-999,"#
                + #""errorDomain":"NSURLErrorDomain","errorMessage":"cancelled","identifier":"a","kind":"failed","#
                + #""sequence":3},"type":"event"}"#)
        // What a version-1 basd sent, decoded by this client.
        let old =
            #"{"type":"event","event":{"sequence":4,"downloadUniqueIdentifier":"U","identifier":"a","#
            + #""kind":"progress","bytesWritten":10,"totalBytes":100,"download":{"identifier":"a","url":"https://x/a","#
            + #""headers":[],"priority":0,"isEssential":false}}}"#
        guard case .event(let event) = try DaemonProtocol.decodeServerMessage(Array(old.utf8)) else {
            throw ListingsError()
        }
        #expect(event.change == .progress(bytesWritten: 10, totalBytes: 100))
        #expect(event.download == DownloadDescription(identifier: "a", url: "https://x/a", priority: 0))
        // A kind's field missing is an error, not an event with holes.
        let holed =
            #"{"type":"event","event":{"sequence":4,"downloadUniqueIdentifier":"U","identifier":"a","#
            + #""kind":"finished","size":10}}"#
        #expect(throws: DaemonProtocolError.self) { try DaemonProtocol.decodeServerMessage(Array(holed.utf8)) }
    }

    @Test("frames split at every byte boundary, and several in one read, come out whole")
    func splitFrames() throws {
        let frames = try Self.clientMessages.map { try DaemonProtocol.encode($0) }
        let stream = frames.flatMap { $0 }
        for cut in [1, 2, 3, 5, 7, 64, stream.count] {
            var reader = FrameReader()
            var decoded: [ClientMessage] = []
            var offset = 0
            while offset < stream.count {
                reader.append(stream[offset..<min(offset + cut, stream.count)])
                offset += cut
                while let payload = try reader.nextFrame() {
                    decoded.append(try DaemonProtocol.decodeClientMessage(payload))
                }
            }
            #expect(decoded == Self.clientMessages)
        }
    }

    @Test("explicit errors: too large, empty, invalid JSON, unknown message, unsupported version")
    func explicitErrors() throws {
        var reader = FrameReader()
        reader.append([0x00, 0x10, 0x00, 0x01])  // 1 MiB + 1
        #expect(throws: DaemonProtocolError.self) { try reader.nextFrame() }
        #expect(
            Self.code { _ = try DaemonProtocol.payloadLength(prefix: UInt32(DaemonProtocol.maximumFrameLength + 1)) }
                == .frameTooLarge)
        #expect(try DaemonProtocol.payloadLength(prefix: UInt32(DaemonProtocol.maximumFrameLength)) == 1 << 20)
        #expect(Self.code { _ = try DaemonProtocol.payloadLength(prefix: 0) } == .emptyFrame)
        #expect(Self.code { _ = try DaemonProtocol.decodeClientMessage([UInt8]()) } == .emptyFrame)
        #expect(Self.code { _ = try DaemonProtocol.decodeClientMessage(Array("{".utf8)) } == .invalidJSON)
        #expect(Self.code { _ = try DaemonProtocol.decodeClientMessage(Array(#"{"id":1}"#.utf8)) } == .invalidJSON)
        #expect(
            Self.code { _ = try DaemonProtocol.decodeClientMessage(Array(#"{"id":-1,"type":"status"}"#.utf8)) }
                == .invalidJSON)
        #expect(
            Self.code { _ = try DaemonProtocol.decodeClientMessage(Array(#"{"id":1,"type":"launchMissiles"}"#.utf8)) }
                == .unknownMessage)
        #expect(
            Self.code { _ = try DaemonProtocol.decodeServerMessage(Array(#"{"type":"gossip"}"#.utf8)) }
                == .unknownMessage)
        let hello = ClientMessage(id: 7, request: .hello(protocolVersion: 2, client: ClientInfo(role: .cli, pid: 1)))
        do {
            _ = try DaemonProtocol.decodeClientMessage(try DaemonProtocol.encode(hello).dropFirst(4))
            Issue.record("version 2 accepted")
        } catch {
            #expect(error.code == .unsupportedProtocolVersion)
            #expect(error.requestId == 7)
            #expect(error.replyCode == .callerConnectionNotAccepted)
        }
        // The id is recovered from a message that is otherwise wrong, so the reply can name it.
        do {
            _ = try DaemonProtocol.decodeClientMessage(Array(#"{"id":12,"type":"cancel"}"#.utf8))
        } catch {
            #expect(error.code == .invalidJSON)
            #expect(error.requestId == 12)
        }
    }

    @Test("random and mutated bytes never trap (bounded fuzz)")
    func fuzz() throws {
        var random = SeededGenerator(state: 0xBA5D)
        let valid = try Self.clientMessages.map { try DaemonProtocol.encode($0) }
        var frames = 0
        for round in 0..<3000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0...96, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }
            } else {
                bytes = valid[round % valid.count]
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            }
            var reader = FrameReader()
            reader.append(bytes)
            for _ in 0..<8 {  // bounded: a reader yields at most bytes.count / 5 frames
                guard let payload = try? reader.nextFrame() else { break }
                frames += 1
                _ = try? DaemonProtocol.decodeClientMessage(payload)
                _ = try? DaemonProtocol.decodeServerMessage(payload)
            }
            _ = try? DaemonProtocol.decodeClientMessage(bytes)
            _ = try? DaemonProtocol.decodeServerMessage(bytes)
        }
        #expect(frames > 0)
    }

    static func code(_ body: () throws -> Void) -> DaemonProtocolError.Code? {
        do {
            try body()
            return nil
        } catch {
            return (error as? DaemonProtocolError)?.code
        }
    }
}

@Suite("basd connection rules")
struct ConnectionRulesTests {
    let client = ClientInfo(role: .cli, pid: 1)

    @Test("hello first; a second hello or a request before it is refused with 56")
    func handshake() {
        var machine = ConnectionStateMachine()
        guard case .replyAndClose(.error(56, _)) = machine.received(.status) else {
            Issue.record("status before hello accepted")
            return
        }
        #expect(machine.received(.hello(protocolVersion: 1, client: client)) == .none)  // closed: ignored

        var fresh = ConnectionStateMachine()
        #expect(
            fresh.received(.hello(protocolVersion: 1, client: client)) == .greet(protocolVersion: 1, client: client))
        #expect(fresh.received(.status) == .status(protocolVersion: 1))
        guard case .reply(.error(56, _)) = fresh.received(.hello(protocolVersion: 1, client: client)) else {
            Issue.record("second hello accepted")
            return
        }
    }

    @Test("an unsupported version is refused with 55 and a close")
    func unsupportedVersion() {
        var machine = ConnectionStateMachine()
        guard case .replyAndClose(.error(55, _)) = machine.received(.hello(protocolVersion: 0, client: client)) else {
            Issue.record("version 0 accepted")
            return
        }
    }

    @Test("bad input closes once; later input is ignored")
    func failure() {
        var machine = ConnectionStateMachine()
        let error = DaemonProtocolError(.invalidJSON, "bad")
        #expect(machine.failed(error) == .replyAndClose(.error(code: 1001, message: "bad")))
        #expect(machine.failed(error) == .none)
    }

    @Test("only the daemon's own uid is allowed")
    func peerUID() {
        #expect(PeerCredentials.isAllowed(peerUID: 1000, daemonUID: 1000))
        #expect(!PeerCredentials.isAllowed(peerUID: 0, daemonUID: 1000))
        #expect(!PeerCredentials.isAllowed(peerUID: 1001, daemonUID: 1000))
        #expect(MemoryLayout<PeerCredentials>.size == 12)  // struct ucred
    }
}
