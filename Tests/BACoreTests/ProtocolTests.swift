import BACore
import Testing

@Suite struct ProtocolTests {
    let download = DownloadDescription(
        identifier: "level-1", uniqueIdentifier: "u-1", url: "https://cdn.example.com/l1",
        headers: [.init(name: "Authorization", value: "Bearer t")], applicationGroupIdentifier: "group.g",
        priority: 100, isEssential: true, fileSize: 1 << 20, sha256: String(repeating: "a", count: 64),
        state: .downloading)

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

    /// Names that display as other names (bidirectional controls, white space at either end) are
    /// refused by the one rule set, for download identifiers, bundle and group identifiers alike;
    /// the message shows the control escaped.
    @Test(arguments: [
        ("moc.elpmaxe\u{202E}", "U+202E"), ("\u{202D}com.example.game", "U+202D"), ("a\u{200E}b", "U+200E"),
        ("a\u{200F}", "U+200F"), ("a\u{202A}b", "U+202A"), ("a\u{2066}b", "U+2066"), ("a\u{2069}", "U+2069"),
        ("a\u{061C}b", "U+61C"), ("com.example.game ", "white space"), (" com.example.game", "white space"),
        ("level-1\u{00A0}", "white space"), ("level-1\t", "control character"),
    ])
    func spoofingIdentifiers(identifier: String, why: String) throws {
        for what in ["identifier", "bundle identifier"] {
            let violation = try #require(
                DownloadRules.checkFolderName(identifier, what: what), "\(identifier.debugDescription)")
            #expect(violation.reason.contains(why), "\(violation.reason)")
            #expect(violation.reason.hasPrefix(what))
            #expect(!violation.reason.unicodeScalars.contains { $0.properties.generalCategory == .format })
        }
        var returned = download
        returned.identifier = identifier
        #expect(DownloadRules.check(returned)?.reason.contains(why) == true)
    }

    @Test func namesThatLookAlikeButHoldNoControlsAreAccepted() {
        // Letters of other scripts, a space inside, and characters whose UTF-8 ends in the bytes
        // the bidirectional check looks at (U+202F, U+00AE, U+2070).
        for identifier in ["level 1", "niveau-été", "уровень", "a\u{202F}b", "\u{00AE}", "x\u{2070}"] {
            #expect(DownloadRules.checkIdentifier(identifier) == nil, "\(identifier.debugDescription)")
        }
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
