import BACore
import BADaemonProtocol
import Testing

/// basd writes its most frequent messages without `JSONEncoder`; what it writes must be byte for
/// byte what `JSONEncoder` (sorted keys) writes, for every kind of event and every optional field.
@Suite("the direct message writer matches JSONEncoder")
struct MessageWriterTests {
    static let tricky = "a\"b\\c/d\n\t\r\u{08}\u{0c}\u{01}\u{1f}\u{7f} é 😀"

    static let download = DownloadDescription(
        identifier: "level-1 " + tricky, uniqueIdentifier: "U-1", url: "https://cdn.example.com/a/b?c=d",
        headers: [.init(name: "Authorization", value: "Bearer " + tricky), .init(name: "X", value: "")],
        applicationGroupIdentifier: "group.g", priority: -3, isEssential: true, fileSize: 1 << 40,
        sha256: String(repeating: "a", count: 64))

    static let changes: [DownloadChange] = [
        .began(offset: 0, isForeground: true), .began(offset: 12_345, isForeground: false),
        .paused(bytesOnDisk: 77), .progress(bytesWritten: 5, totalBytes: nil),
        .progress(bytesWritten: 5, totalBytes: 1 << 33), .finished(destination: "/c/" + tricky, size: 9),
        .failed(domain: "NSURLErrorDomain", code: -999, message: tricky), .needsCredentials(challenge: tricky),
        .waiting(reason: tricky, retryAt: 1_800_000_000_123, attempt: 3),
    ]

    static var messages: [ServerMessage] {
        var all: [ServerMessage] = [.response(requestId: 0, result: .ok), .partialResponse(requestId: 9, result: .ok)]
        for change in changes {
            all.append(
                .event(DownloadEvent(sequence: 1 << 40, downloadUniqueIdentifier: "U", identifier: "i", change: change))
            )
            all.append(
                .event(
                    DownloadEvent(
                        sequence: 0, downloadUniqueIdentifier: "U", identifier: tricky, change: change,
                        appIdentifier: "com.example.app", download: download, parked: tricky)))
        }
        var full = DownloadInfo(
            uniqueIdentifier: "U-1", download: download, state: .failed, isForeground: true, bytesOnDisk: 3,
            appIdentifier: "com.example.app", attempts: 4, errorCode: 202, errorMessage: tricky)
        full.waitingFor = "queue"
        full.queuePosition = 12_345
        full.parkedEvent = tricky
        let bare = DownloadInfo(
            uniqueIdentifier: "U-2", download: DownloadDescription(identifier: "b", url: "https://x/b"),
            state: .waiting,
            isForeground: false, bytesOnDisk: 0)
        all.append(.response(requestId: 7, result: .downloads([full])))
        all.append(.response(requestId: 8, result: .downloads([bare, full, bare])))
        all.append(.partialResponse(requestId: 8, result: .downloads([])))
        all.append(
            .response(requestId: 8, result: .downloadList(DownloadListing(downloads: [full, bare], notShown: 7))))
        return all
    }

    @Test func everyCoveredMessageIsWrittenAsJSONEncoderWritesIt() throws {
        for message in Self.messages {
            let written = try #require(MessageWriter.writeServerMessage(message), "\(message) is covered")
            let foundation = try DaemonProtocol.encodeWithFoundation(message)
            #expect(
                String(decoding: written, as: UTF8.self) == String(decoding: foundation, as: UTF8.self), "\(message)")
            #expect(try DaemonProtocol.decodeServerMessage(written) == message)
        }
    }

    @Test func anAppsFrequentRequestsAreWrittenAsJSONEncoderWritesThem() throws {
        let requests: [Request] = [
            .schedule(Self.download), .schedule(DownloadDescription(identifier: "b", url: "https://x/b")),
            .acknowledgeEvents(throughSequence: 1 << 50), .status, .currentDownloads, .subscribeEvents,
            .startForeground(identifier: Self.tricky), .cancel(identifier: "c"),
        ]
        for (index, request) in requests.enumerated() {
            let message = ClientMessage(id: UInt64(index) * 1_000_003, request: request)
            let written = try #require(MessageWriter.writeClientMessage(message), "\(request) is covered")
            let foundation = try DaemonProtocol.encodeWithFoundation(message)
            #expect(
                String(decoding: written, as: UTF8.self) == String(decoding: foundation, as: UTF8.self), "\(request)")
            #expect(try DaemonProtocol.decodeClientMessage(written) == message)
        }
        #expect(MessageWriter.writeClientMessage(ClientMessage(id: 1, request: .listDownloads(app: nil))) == nil)
    }

    @Test func whatItDoesNotCoverIsLeftToJSONEncoder() throws {
        var retrying = DownloadInfo(
            uniqueIdentifier: "U", download: DownloadDescription(identifier: "b", url: "https://x/b"), state: .waiting,
            isForeground: false, bytesOnDisk: 0)
        retrying.nextAttemptAt = 1_700_000_000.25
        #expect(MessageWriter.writeServerMessage(.response(requestId: 1, result: .downloads([retrying]))) == nil)
        #expect(MessageWriter.writeServerMessage(.response(requestId: 1, result: .error(code: 1, message: "x"))) == nil)
        // And the frame is still right.
        let frame = try DaemonProtocol.encode(ServerMessage.response(requestId: 1, result: .downloads([retrying])))
        #expect(
            try DaemonProtocol.decodeServerMessage(frame.dropFirst(4))
                == .response(requestId: 1, result: .downloads([retrying])))
    }
}
