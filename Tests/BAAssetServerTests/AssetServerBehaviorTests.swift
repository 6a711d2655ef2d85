import BAAssetServer
import BATestSupport
import Foundation
import Testing

/// Every deliberate misbehaviour, observed on the wire.
@Suite struct AssetServerBehaviorTests {
    let contents = sampleBytes(1000)

    /// Runs `body` against a server with `/a.bin` in memory (or on disk under a root) set to misbehave.
    func withMisbehavingServer(
        _ behavior: Behavior, onDisk: Bool = false, _ body: (AssetServer) async throws -> Void
    ) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        if onDisk { try directory.write("a.bin", contents) }
        try await withServer(root: onDisk ? directory.url : nil) { server in
            if !onDisk { server.setFile("/a.bin", contents: contents) }
            server.setBehavior(behavior, for: "/a.bin")
            try await body(server)
        }
    }

    @Test(arguments: [false, true])
    func dropAfterSendsTheFullLengthThenCloses(onDisk: Bool) async throws {
        try await withMisbehavingServer(.dropAfter(bytes: 100), onDisk: onDisk) { server in
            let client = try RawHTTPClient(port: server.port)
            try client.sendRaw(RawHTTPClient.requestText("GET", "/a.bin"))
            let head = try client.readHead()
            #expect(head.status == 200)
            #expect(head.contentLength == 1000)
            #expect(try client.readToEnd() == Array(contents[..<100]))

            // Relative to the range, for a resumed download.
            let ranged = try RawHTTPClient(port: server.port)
            try ranged.sendRaw(RawHTTPClient.requestText("GET", "/a.bin", headers: [("Range", "bytes=500-")]))
            #expect(try ranged.readHead().status == 206)
            #expect(try ranged.readToEnd() == Array(contents[500..<600]))
        }
    }

    @Test(arguments: [1500, 400])
    func lieAboutLengthDeclaresAnotherLengthAndCloses(declared: Int) async throws {
        try await withMisbehavingServer(.lieAboutLength(declared: declared)) { server in
            let client = try RawHTTPClient(port: server.port)
            try client.sendRaw(RawHTTPClient.requestText("GET", "/a.bin"))
            let head = try client.readHead()
            #expect(head.contentLength == declared)
            #expect(try client.readToEnd() == contents, "the real body, then the connection closes")
        }
    }

    @Test func ignoreRangeAnswersRangedRequestsWithTheWholeFile() async throws {
        try await withMisbehavingServer(.ignoreRange) { server in
            let response = try RawHTTPClient(port: server.port).request(
                "GET", "/a.bin", headers: [("Range", "bytes=500-")])
            #expect(response.status == 200)
            #expect(response.header("content-range") == nil)
            #expect(response.body == contents)
        }
    }

    @Test func changeETagEachRequestNeverMatchesIfRange() async throws {
        try await withMisbehavingServer(.changeETagEachRequest) { server in
            let client = try RawHTTPClient(port: server.port)
            let first = try client.request("GET", "/a.bin")
            let second = try client.request("HEAD", "/a.bin")
            let firstTag = try #require(first.header("etag"))
            #expect(firstTag != second.header("etag"))
            #expect(firstTag.hasPrefix("\"") && !firstTag.hasPrefix("W/"))
            #expect(first.header("last-modified") != second.header("last-modified"))
            let resumed = try client.request(
                "GET", "/a.bin", headers: [("Range", "bytes=10-"), ("If-Range", try #require(second.header("etag")))])
            #expect(resumed.status == 200)
            #expect(resumed.body == contents)
        }
    }

    @Test func statusCountsDownThenServesNormally() async throws {
        try await withMisbehavingServer(.status(503, retryAfter: "2", times: 2)) { server in
            let client = try RawHTTPClient(port: server.port)
            for _ in 0..<2 {
                let response = try client.request("GET", "/a.bin")
                #expect(response.status == 503)
                #expect(response.header("retry-after") == "2")
            }
            #expect(try client.request("GET", "/a.bin").body == contents)
        }
    }

    @Test(arguments: [500, 429])
    func statusWithoutCountIsPermanentAndAppliesToMissingPaths(code: Int) async throws {
        try await withServer { server in
            server.setBehavior(.status(code), for: "/nothing-here")
            let client = try RawHTTPClient(port: server.port)
            for _ in 0..<3 {
                let response = try client.request("GET", "/nothing-here")
                #expect(response.status == code)
                #expect(response.header("retry-after") == nil)
            }
            server.setBehavior(nil, for: "/nothing-here")
            #expect(try client.request("GET", "/nothing-here").status == 404)
        }
    }

    @Test func requireBasicAuthChecksTheCredentials() async throws {
        try await withMisbehavingServer(.requireBasicAuth(user: "ann", password: "s3cret")) { server in
            let client = try RawHTTPClient(port: server.port)
            let anonymous = try client.request("GET", "/a.bin")
            #expect(anonymous.status == 401)
            #expect(anonymous.header("www-authenticate") == "Basic realm=\"assets\"")
            let wrong = Data("ann:wrong".utf8).base64EncodedString()
            #expect(try client.request("GET", "/a.bin", headers: [("Authorization", "Basic \(wrong)")]).status == 401)
            #expect(try client.request("GET", "/a.bin", headers: [("Authorization", "Basic !!!")]).status == 401)
            let right = Data("ann:s3cret".utf8).base64EncodedString()
            let response = try client.request("GET", "/a.bin", headers: [("Authorization", "basic \(right)")])
            #expect(response.status == 200)
            #expect(response.body == contents)
        }
    }

    @Test(arguments: [false, true])
    func stallSendsSomeBytesThenHoldsTheConnectionUntilShutdown(onDisk: Bool) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        if onDisk { try directory.write("a.bin", contents) }
        let server = try await AssetServer.start(root: onDisk ? directory.url : nil)
        if !onDisk { server.setFile("/a.bin", contents: contents) }
        server.setBehavior(.stall(afterBytes: 300), for: "/a.bin")
        let client = try RawHTTPClient(port: server.port)
        try client.sendRaw(RawHTTPClient.requestText("GET", "/a.bin"))
        #expect(try client.readHead().contentLength == 1000)
        #expect(try client.read(count: 300) == Array(contents[..<300]))
        // A bounded look for more bytes: none come, and the connection stays open.
        #expect(client.staysSilent(for: .milliseconds(200)))
        try await server.shutdown()
        #expect(try client.readToEnd().isEmpty, "shutdown closes the stalled connection")
    }

    @Test func trickleSendsTheBodySlowly() async throws {
        let small = sampleBytes(200)
        try await withServer { server in
            server.setFile("/slow.bin", contents: small)
            server.setBehavior(.trickle(bytesPerSecond: 1000), for: "/slow.bin")  // 10-byte chunks every 10 ms
            let client = try RawHTTPClient(port: server.port)
            let clock = ContinuousClock()
            let start = clock.now
            let response = try client.request("GET", "/slow.bin")
            let elapsed = clock.now - start
            #expect(response.body == small)
            #expect(elapsed >= .milliseconds(150), "200 bytes at 1000 B/s took \(elapsed)")
            #expect(elapsed < .seconds(2))
            // The connection is still good for the next request.
            #expect(
                try client.request("GET", "/slow.bin", headers: [("Range", "bytes=-5")]).body == Array(small[195...]))
        }
    }

    @Test(arguments: [false, true])
    func chunkedSendsTheBodyWithoutALength(onDisk: Bool) async throws {
        try await withMisbehavingServer(.chunked, onDisk: onDisk) { server in
            let client = try RawHTTPClient(port: server.port)
            try client.sendRaw(RawHTTPClient.requestText("GET", "/a.bin"))
            let head = try client.readHead()
            #expect(head.status == 200)
            #expect(head.contentLength == nil)
            #expect(head.header("transfer-encoding") == "chunked")
            let whole = try client.readChunkedBody()
            #expect(whole.body == contents)
            #expect(whole.chunks >= 1)

            // A ranged request on the same connection (the chunked framing ended the first response):
            // the part, still without a length, with its Content-Range.
            try client.sendRaw(RawHTTPClient.requestText("GET", "/a.bin", headers: [("Range", "bytes=600-")]))
            let ranged = try client.readHead()
            #expect(ranged.status == 206)
            #expect(ranged.contentLength == nil)
            #expect(ranged.header("content-range") == "bytes 600-999/1000")
            #expect(try client.readChunkedBody().body == Array(contents[600...]))
        }
    }

    @Test func redirectSendsLocation() async throws {
        try await withServer { server in
            server.setFile("/new.bin", contents: contents)
            server.setBehavior(.redirect(to: "/new.bin"), for: "/old.bin")
            server.setBehavior(.redirect(to: server.url("/new.bin"), status: 301), for: "/moved.bin")
            let client = try RawHTTPClient(port: server.port)
            let found = try client.request("GET", "/old.bin")
            #expect(found.status == 302)
            #expect(found.header("location") == "/new.bin")
            let moved = try client.request("HEAD", "/moved.bin")
            #expect(moved.status == 301)
            #expect(moved.header("location") == server.url("/new.bin"))
            server.setBehavior(.status(500), for: "/old.bin")  // replaces the redirect
            #expect(try client.request("GET", "/old.bin").status == 500)
        }
    }
}
