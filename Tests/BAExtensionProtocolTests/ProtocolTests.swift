import BAExtensionProtocol
import Testing

@Suite struct ProtocolTests {
    let download = DownloadRecord(
        identifier: "level-1", uniqueIdentifier: "u-1", url: "https://cdn.example.com/l1",
        applicationGroupIdentifier: "group.g",
        fileSize: 1 << 20, priority: 100, isEssential: true, state: 2,
        headers: [.init(name: "Authorization", value: "Bearer t")],
        sha256: String(repeating: "a", count: 64))

    func roundTrip(_ message: RunnerMessage) throws -> RunnerMessage {
        var decoder = FrameDecoder()
        decoder.append(message.frame())
        let payload = try #require(try decoder.next())
        return try RunnerMessage.decode(payload)
    }

    @Test func runnerMessagesRoundTrip() throws {
        let messages: [RunnerMessage] = [
            .hello(protocolVersion: 1),
            .identity(ExtensionIdentity(name: "X", version: "1.0", abiMajor: 1, abiMinor: 0, entryPoints: 0b11111)),
            .download(download), .scheduled(download), .cancelled(identifier: "c"), .log(level: 3, message: "héllo"),
            .credential(user: "u", password: "p"),
            .failure(RunnerFailure(kind: .abiMismatch, message: "m", foundMajor: 99, foundMinor: 2)),
            .finished(RunnerSummary(returnedCount: 5, peakMemoryBytes: 1234, challengeDisposition: 0)),
        ]
        for message in messages { #expect(try roundTrip(message) == message) }
    }

    @Test func requestsRoundTrip() throws {
        let events: [RunnerEvent] = [
            .contentRequest(
                request: 1, manifestPath: "/m", manifestURL: "https://e.com/m", restrictedRemaining: -1,
                restrictedEssentialRemaining: 10),
            .finished(download, filePath: "/f"),
            .failed(download, ErrorRecord(domain: "d", code: 102, message: "m")),
            .challenge(
                download,
                ChallengeRecord(
                    host: "h", port: 443, protocolName: "https", realm: "", authenticationMethod: "basic",
                    previousFailureCount: 1)),
            .willTerminate,
        ]
        for event in events {
            let request = HostMessage.request(
                RunRequest(
                    libraryPath: "/lib.so", event: event, memoryLimitBytes: 1 << 28, maximumDownloads: 10,
                    lockPath: "/l", currentDownloads: [download]))
            var decoder = FrameDecoder()
            decoder.append(request.frame())
            #expect(try HostMessage.decode(try #require(try decoder.next())) == request)
        }
    }

    @Test func terminateRoundTrips() throws {
        var decoder = FrameDecoder()
        decoder.append(HostMessage.terminate.frame())
        #expect(try HostMessage.decode(try #require(try decoder.next())) == .terminate)
    }

    @Test func framesArriveInPieces() throws {
        let bytes =
            RunnerMessage.log(level: 1, message: "split").frame() + RunnerMessage.hello(protocolVersion: 1).frame()
        var decoder = FrameDecoder()
        var decoded: [RunnerMessage] = []
        for byte in bytes {
            decoder.append([byte])
            while let payload = try decoder.next() { decoded.append(try RunnerMessage.decode(payload)) }
        }
        #expect(decoded == [.log(level: 1, message: "split"), .hello(protocolVersion: 1)])
        #expect(decoder.pendingByteCount == 0)
    }

    @Test func malformedInputIsAnErrorNotACrash() throws {
        var oversized = FrameDecoder(maximumFrameLength: 16)
        oversized.append([0xFF, 0xFF, 0xFF, 0x7F, 1])
        #expect(throws: WireError.self) { try oversized.next() }
        var empty = FrameDecoder()
        empty.append([0, 0, 0, 0])
        #expect(throws: WireError.self) { try empty.next() }
        #expect(throws: WireError.self) { try RunnerMessage.decode([200]) }
        #expect(throws: WireError.self) { try RunnerMessage.decode([3, 5, 0, 0, 0, 65]) }  // string longer than payload
        #expect(throws: WireError.self) {
            try RunnerMessage.decode(RunnerMessage.hello(protocolVersion: 1).frame().dropFirst(4) + [0])
        }
        // Random bytes never trap.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let count = Int.random(in: 0..<64, using: &generator)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? RunnerMessage.decode(bytes)
            _ = try? HostMessage.decode(bytes)
        }
    }

    @Test func invalidUTF8IsFlaggedNotTrusted() throws {
        var writer = ByteWriter()
        writer.u8(3)
        var record = ByteWriter()
        download.encode(into: &record)
        var bytes = record.bytes
        // Corrupt the first byte of the identifier ("level-1" starts after its 4-byte length).
        bytes[4] = 0xFF
        let decoded = try RunnerMessage.decode([3] + bytes)
        guard case .download(let corrupt) = decoded else {
            Issue.record("expected a download")
            return
        }
        #expect(!corrupt.isWellFormed)
        #expect(DownloadRules.check(corrupt)?.reason.contains("malformed") == true)
    }

    @Test func rules() {
        #expect(DownloadRules.checkIdentifier("ok.name-1_2") == nil)
        #expect(DownloadRules.checkIdentifier("") != nil)
        #expect(DownloadRules.checkIdentifier("..") != nil)
        #expect(DownloadRules.checkIdentifier("a..b") != nil)
        #expect(DownloadRules.checkIdentifier(String(repeating: "x", count: 1025)) != nil)
        #expect(DownloadRules.checkURL("https://cdn.example.com/a") == nil)
        #expect(DownloadRules.checkURL("HTTPS://CDN.example.com") == nil)
        #expect(DownloadRules.checkURL("http://127.8.9.1:80/a") == nil)
        #expect(DownloadRules.checkURL("http://user@[::1]:8080/a") == nil)
        #expect(DownloadRules.checkURL("http://127.0.0.1.evil.com/a") != nil)
        #expect(DownloadRules.checkURL("http://localhost.evil.com/a") != nil)
        #expect(DownloadRules.checkURL("file:///etc/passwd") != nil)
        #expect(DownloadRules.checkURL("https:///nohost") != nil)
        #expect(DownloadRules.checkURL("not a url") != nil)
        var bad = download
        bad.sha256 = "xyz"
        #expect(DownloadRules.check(bad) != nil)
        bad = download
        bad.headers = [.init(name: "X-Evil", value: "a\r\nInjected: 1")]
        #expect(DownloadRules.check(bad) != nil)
        bad = download
        bad.fileSize = DownloadRules.maximumFileSize + 1
        #expect(DownloadRules.check(bad) != nil)
        let duplicates = DownloadRules.validate([download, download], contentRequest: 1)
        #expect(duplicates.accepted.count == 1 && duplicates.rejected.first?.violation.code == 100)
    }
}
