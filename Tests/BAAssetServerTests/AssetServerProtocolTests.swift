import BAAssetServer
import BATestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// HTTP/1.1 as the download engine relies on it, checked byte for byte over real loopback connections.
@Suite struct AssetServerProtocolTests {
    let contents = sampleBytes(1000)

    @Test func fullGetCarriesLengthValidatorsAndAcceptRanges() async throws {
        try await withServer { server in
            server.setFile("/a.bin", contents: contents)
            let response = try RawHTTPClient(port: server.port).request("GET", "/a.bin")
            #expect(response.status == 200)
            #expect(response.body == contents)
            #expect(response.contentLength == 1000)
            #expect(response.header("accept-ranges") == "bytes")
            let etag = try #require(response.header("etag"))
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count > 2, "a strong, quoted tag: \(etag)")
            let lastModified = try #require(response.header("last-modified"))
            #expect(lastModified.hasSuffix(" GMT"))
            #expect(response.header("date") != nil)
        }
    }

    @Test func etagIsDerivedFromContents() async throws {
        try await withServer { server in
            server.setFile("/a.bin", contents: contents)
            server.setFile("/same.bin", contents: contents)
            server.setFile("/other.bin", contents: sampleBytes(1000, seed: 1))
            server.setFile("/given.bin", contents: contents, etag: "v1")
            let client = try RawHTTPClient(port: server.port)
            let a = try client.request("HEAD", "/a.bin").header("etag")
            #expect(a == (try client.request("HEAD", "/same.bin").header("etag")))
            #expect(a != (try client.request("HEAD", "/other.bin").header("etag")))
            #expect(try client.request("HEAD", "/given.bin").header("etag") == "\"v1\"")
        }
    }

    @Test func headHasTheHeadersOfGetAndNoBody() async throws {
        try await withServer { server in
            server.setFile("/a.bin", contents: contents, lastModified: Date(timeIntervalSince1970: 784_111_777))
            let client = try RawHTTPClient(port: server.port)
            let head = try client.request("HEAD", "/a.bin")
            #expect(head.status == 200)
            #expect(head.contentLength == 1000)
            #expect(head.header("last-modified") == "Sun, 06 Nov 1994 08:49:37 GMT")
            // Had the server sent a body, the next response would start inside it.
            let get = try client.request("GET", "/a.bin")
            #expect(get.status == 200)
            #expect(get.body == contents)
            #expect(get.header("etag") == head.header("etag"))
        }
    }

    @Test(arguments: [
        ("bytes=2-5", 2..<6),
        ("bytes=990-", 990..<1000),
        ("bytes=-3", 997..<1000),
        ("bytes=0-0", 0..<1),
        ("bytes=900-5000", 900..<1000),  // an end past the last byte is clamped
        ("bytes=-5000", 0..<1000),  // a suffix longer than the file is all of it
    ])
    func rangeGets206WithContentRange(header: String, expected: Range<Int>) async throws {
        try await withServer { server in
            server.setFile("/a.bin", contents: contents)
            let response = try RawHTTPClient(port: server.port).request("GET", "/a.bin", headers: [("Range", header)])
            #expect(response.status == 206)
            #expect(response.header("content-range") == "bytes \(expected.lowerBound)-\(expected.upperBound - 1)/1000")
            #expect(response.contentLength == expected.count)
            #expect(response.body == Array(contents[expected]))
            #expect(response.header("etag") != nil)
            #expect(response.header("last-modified") != nil)
        }
    }

    @Test(arguments: ["bytes=1000-", "bytes=5000-6000", "bytes=-0"])
    func unsatisfiableRangeGets416(header: String) async throws {
        try await withServer { server in
            server.setFile("/a.bin", contents: contents)
            let response = try RawHTTPClient(port: server.port).request("GET", "/a.bin", headers: [("Range", header)])
            #expect(response.status == 416)
            #expect(response.header("content-range") == "bytes */1000")
            #expect(response.body.isEmpty)
        }
    }

    @Test(arguments: ["bytes=5-2", "bytes=0-1,5-6", "items=0-1", "bytes=x-", "bytes=-"])
    func invalidOrMultipleRangesAreIgnored(header: String) async throws {
        try await withServer { server in
            server.setFile("/a.bin", contents: contents)
            let response = try RawHTTPClient(port: server.port).request("GET", "/a.bin", headers: [("Range", header)])
            #expect(response.status == 200)
            #expect(response.body == contents)
        }
    }

    @Test func ifRangeWithTheCurrentValidatorGetsThePart() async throws {
        try await withServer { server in
            server.setFile("/a.bin", contents: contents, lastModified: Date(timeIntervalSince1970: 1_700_000_000))
            let client = try RawHTTPClient(port: server.port)
            let etag = try #require(try client.request("HEAD", "/a.bin").header("etag"))
            let byTag = try client.request("GET", "/a.bin", headers: [("Range", "bytes=10-"), ("If-Range", etag)])
            #expect(byTag.status == 206)
            #expect(byTag.body == Array(contents[10...]))
            let byDate = try client.request(
                "GET", "/a.bin", headers: [("Range", "bytes=10-"), ("If-Range", "Tue, 14 Nov 2023 22:13:20 GMT")])
            #expect(byDate.status == 206)
        }
    }

    @Test(arguments: ["\"stale\"", "W/\"x\"", "Mon, 13 Nov 2023 22:13:20 GMT", "not a date"])
    func ifRangeWithAnotherValidatorGetsTheWholeFile(ifRange: String) async throws {
        try await withServer { server in
            server.setFile("/a.bin", contents: contents, lastModified: Date(timeIntervalSince1970: 1_700_000_000))
            let response = try RawHTTPClient(port: server.port).request(
                "GET", "/a.bin", headers: [("Range", "bytes=10-"), ("If-Range", ifRange)])
            #expect(response.status == 200)
            #expect(response.body == contents)
        }
    }

    @Test func replaceFileChangesBothValidators() async throws {
        try await withServer { server in
            server.setFile("/a.bin", contents: contents)
            let client = try RawHTTPClient(port: server.port)
            let before = try client.request("HEAD", "/a.bin")
            let replacement = sampleBytes(1200, seed: 9)
            server.replaceFile("/a.bin", contents: replacement)
            let after = try client.request(
                "GET", "/a.bin", headers: [("Range", "bytes=500-"), ("If-Range", try #require(before.header("etag")))])
            #expect(after.status == 200, "the old tag no longer matches: the whole new file")
            #expect(after.body == replacement)
            #expect(after.header("etag") != before.header("etag"))
            #expect(after.header("last-modified") != before.header("last-modified"))
        }
    }

    @Test func unknownPathIs404AndOtherMethodsAre405() async throws {
        try await withServer { server in
            let client = try RawHTTPClient(port: server.port)
            #expect(try client.request("GET", "/missing.bin").status == 404)
            #expect(try client.request("HEAD", "/missing.bin").status == 404)
            let post = try client.request("POST", "/missing.bin", headers: [("Content-Length", "0")])
            #expect(post.status == 405)
            #expect(post.header("allow") == "GET, HEAD")
        }
    }

    @Test func keepAliveServesManyRequestsOnOneConnection() async throws {
        try await withServer { server in
            for index in 0..<20 { server.setFile("/f\(index)", contents: sampleBytes(100 + index, seed: index)) }
            let client = try RawHTTPClient(port: server.port)
            for index in 0..<20 {
                let response = try client.request("GET", "/f\(index)")
                #expect(response.body == sampleBytes(100 + index, seed: index))
                #expect(response.header("connection") == nil)
            }
            // Pipelined: three requests in one write, answered in order.
            try client.sendRaw(
                RawHTTPClient.requestText("GET", "/f1") + RawHTTPClient.requestText("HEAD", "/f2")
                    + RawHTTPClient.requestText("GET", "/f3", headers: [("Range", "bytes=0-9")]))
            #expect(try client.readResponse().body == sampleBytes(101, seed: 1))
            #expect(try client.readResponse(isHead: true).contentLength == 102)
            #expect(try client.readResponse().body == Array(sampleBytes(103, seed: 3)[0..<10]))
            #expect(server.requests.count == 23)
        }
    }

    @Test func connectionCloseIsHonoured() async throws {
        try await withServer { server in
            server.setFile("/a.bin", contents: contents)
            let client = try RawHTTPClient(port: server.port)
            let response = try client.request("GET", "/a.bin", headers: [("Connection", "close")])
            #expect(response.header("connection") == "close")
            #expect(try client.readToEnd().isEmpty)
        }
    }

    @Test func requestsAreRecordedInOrder() async throws {
        try await withServer { server in
            server.setFile("/a b.bin", contents: contents)
            let client = try RawHTTPClient(port: server.port)
            _ = try client.request("HEAD", "/a%20b.bin?x=1")
            _ = try client.request("GET", "/a%20b.bin", headers: [("Range", "bytes=1-2"), ("X-Test", "yes")])
            _ = try client.request("GET", "/other")
            let recorded = server.requests(for: "/a b.bin")
            #expect(recorded.map(\.method) == ["HEAD", "GET"])
            #expect(recorded.first?.target == "/a%20b.bin?x=1")
            #expect(recorded.last?.header("range") == "bytes=1-2")
            #expect(recorded.last?.header("x-test") == "yes")
            #expect(server.requests.map(\.path) == ["/a b.bin", "/a b.bin", "/other"])
        }
    }

    @Test func diskFilesAreServedFromRoot() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let disk = sampleBytes(100_000, seed: 5)
        let file = try directory.write("sub/big.bin", disk)
        try await withServer(root: directory.url) { server in
            let client = try RawHTTPClient(port: server.port)
            let full = try client.request("GET", "/sub/big.bin")
            #expect(full.status == 200)
            #expect(full.body == disk)
            let etag = try #require(full.header("etag"))
            #expect(full.header("last-modified") != nil)

            let part = try client.request(
                "GET", "/sub/big.bin", headers: [("Range", "bytes=-100"), ("If-Range", etag)])
            #expect(part.status == 206)
            #expect(part.header("content-range") == "bytes 99900-99999/100000")
            #expect(part.body == Array(disk[99_900...]))
            #expect(try client.request("HEAD", "/sub/big.bin").header("etag") == etag, "stable while unchanged")

            #expect(try client.request("GET", "/sub").status == 404, "a directory is not an asset")
            #expect(try client.request("GET", "/sub/").status == 404)
            #expect(try client.request("GET", "/nope.bin").status == 404)

            // Memory wins over disk.
            server.setFile("/sub/big.bin", contents: [1, 2, 3])
            #expect(try client.request("GET", "/sub/big.bin").body == [1, 2, 3])

            // A rewritten file on disk has a new tag.
            try Data(sampleBytes(10)).write(to: directory.url.appendingPathComponent("other.bin"))
            let first = try client.request("GET", "/other.bin").header("etag")
            try FileManager.default.removeItem(at: directory.url.appendingPathComponent("other.bin"))
            try Data(sampleBytes(11)).write(to: directory.url.appendingPathComponent("other.bin"))
            #expect(try client.request("GET", "/other.bin").header("etag") != first)
            _ = file
        }
    }

    @Test func clientsHangingUpMidBodyAreHarmless() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("big.bin", [UInt8](repeating: 7, count: 4 << 20))
        try await withServer(root: directory.url) { server in
            server.setFile("/slow.bin", contents: sampleBytes(1000))
            server.setBehavior(.trickle(bytesPerSecond: 1000), for: "/slow.bin")
            for path in ["/big.bin", "/slow.bin"] {
                var client: RawHTTPClient? = try RawHTTPClient(port: server.port)
                try client?.sendRaw(RawHTTPClient.requestText("GET", path))
                #expect(try client?.readHead().status == 200)
                client = nil  // closes the socket with most of the body unsent
            }
            // The server lives on (a leaked file handle would have trapped in this debug build).
            #expect(try RawHTTPClient(port: server.port).request("HEAD", "/big.bin").contentLength == 4 << 20)
        }
    }

    @Test func pipelinedRequestsForLargeDiskFilesEachGetTheirBytes() async throws {
        // The second request is read (and its file opened) while the first body is still being sent.
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let first = sampleBytes(4 << 20, seed: 1)
        let second = sampleBytes(1 << 20, seed: 2)
        try directory.write("first.bin", first)
        try directory.write("second.bin", second)
        try await withServer(root: directory.url) { server in
            let client = try RawHTTPClient(port: server.port)
            try client.sendRaw(
                RawHTTPClient.requestText("GET", "/first.bin") + RawHTTPClient.requestText("GET", "/second.bin")
                    + RawHTTPClient.requestText("GET", "/first.bin", headers: [("Range", "bytes=-10")]))
            #expect(try client.readResponse().body == first)
            #expect(try client.readResponse().body == second)
            #expect(try client.readResponse().body == Array(first[(first.count - 10)...]))
        }
    }

    @Test(arguments: [
        "/../secret.txt", "/sub/../../secret.txt", "/%2e%2e/secret.txt", "/sub/%2E%2E/%2e%2e/secret.txt",
        "/a%00b", "/%zz", "relative",
    ])
    func traversalAndBadPathsAreRefused(target: String) async throws {
        let parent = try TemporaryDirectory()
        defer { parent.remove() }
        try parent.write("secret.txt", Array("secret".utf8))
        try parent.write("root/sub/inside.txt", Array("inside".utf8))
        try await withServer(root: parent.url.appendingPathComponent("root")) { server in
            let client = try RawHTTPClient(port: server.port)
            let response = try client.request("GET", target)
            #expect(response.status == 400 || response.status == 404)
            #expect(!String(decoding: response.body, as: UTF8.self).contains("secret"))
            // The connection may be closed after a malformed request; a new one still works.
            #expect(try RawHTTPClient(port: server.port).request("GET", "/sub/inside.txt").status == 200)
        }
    }

    @Test func malformedRequestGets400AndTheServerCarriesOn() async throws {
        try await withServer { server in
            server.setFile("/a.bin", contents: contents)
            let bad = try RawHTTPClient(port: server.port)
            try bad.sendRaw("THIS IS NOT HTTP\r\n\u{1}\u{2}\r\n\r\n")
            #expect(try bad.readHead().status == 400)
            let huge = try RawHTTPClient(port: server.port)
            try huge.sendRaw("GET /a.bin HTTP/1.1\r\nX: " + String(repeating: "y", count: 200_000) + "\r\n\r\n")
            _ = try? huge.readToEnd()  // refused one way or another; what matters is the server lives
            #expect(try RawHTTPClient(port: server.port).request("GET", "/a.bin").body == contents)
        }
    }

    @Test func urlSessionDownloadsAFile() async throws {
        try await withServer { server in
            server.setFile("/a.bin", contents: contents)
            let url = try #require(URL(string: server.url("/a.bin")))
            let (data, response) = try await URLSession.shared.data(from: url)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(Array(data) == contents)
        }
    }

    /// A server on a port no parallel test's server can be given once this one frees it (``TestPorts``).
    static func serverOutsideTheEphemeralRange() async throws -> AssetServer {
        var lastError: any Error = HarnessError("no port below the ephemeral range was free")
        for _ in 0..<50 {
            do {
                return try await AssetServer.start(port: TestPorts.toCheckFreed())
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    @Test func shutdownFreesThePortAndClosesConnections() async throws {
        let server = try await Self.serverOutsideTheEphemeralRange()
        #expect(server.baseURL == "http://127.0.0.1:\(server.port)")
        #expect(server.url("/x") == server.baseURL + "/x")
        server.setFile("/a.bin", contents: contents)
        let client = try RawHTTPClient(port: server.port)
        #expect(try client.request("GET", "/a.bin").status == 200)
        try await server.shutdown()
        #expect(try client.readToEnd().isEmpty, "the idle keep-alive connection is closed")
        try await server.shutdown()  // idempotent

        let again = try await AssetServer.start(port: server.port)
        #expect(again.port == server.port)
        again.setFile("/b.bin", contents: [9])
        #expect(try RawHTTPClient(port: again.port).request("GET", "/b.bin").body == [9])
        try await again.shutdown()
        #expect(throws: (any Error).self) { try RawHTTPClient(port: again.port) }
    }
}
