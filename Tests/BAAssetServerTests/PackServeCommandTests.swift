import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `ba pack serve` run as a real process on a publish folder: what a CDN answers (ranges, ETag,
/// Last-Modified, content types, 404, HEAD), the hostile requests (a `..` path, a range past the
/// end), `--fail-every`, and a clean stop on SIGINT and SIGTERM.
@Suite struct PackServeCommandTests {
    static let ba = BuildProducts.executable("ba")

    /// Starts `ba pack serve FOLDER ARGUMENTS…`; returns it and the port it printed.
    static func start(_ folder: String, _ arguments: [String] = []) async throws -> (ChildProcess, Int) {
        let server = try ChildProcess(ba, ["pack", "serve", folder] + arguments)
        do {
            try await server.waiting("its serving line") { !$0.stdoutLines.isEmpty }
        } catch {
            server.kill()
            throw error
        }
        let line = server.stdoutLines[0]
        let prefix = "serving \(folder) at http://127.0.0.1:"
        guard line.hasPrefix(prefix), let port = Int(line.dropFirst(prefix.count).prefix { $0.isNumber }) else {
            server.kill()
            throw HarnessError("ba pack serve printed \(line.debugDescription)")
        }
        return (server, port)
    }

    static func publishFolder() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        try directory.write("manifest.json", Array(#"{"formatVersion": 1}"#.utf8))
        try directory.write("manifest.json.sig", Array("c2lnbmF0dXJl\n".utf8))
        try directory.write("chunks/ab/abcdef", sampleBytes(10_000))
        try directory.write("packs/levels/1-0.bundle", sampleBytes(3000))
        return directory
    }

    @Test func servesAPublishFolderAsACDNDoes() async throws {
        let directory = try Self.publishFolder()
        defer { directory.remove() }
        let (server, port) = try await Self.start(directory.path)
        defer { server.kill() }
        let client = try RawHTTPClient(port: port)
        let manifest = try client.request("GET", "/manifest.json")
        #expect(manifest.status == 200)
        #expect(manifest.header("content-type") == "application/json")
        #expect(manifest.header("etag") != nil && manifest.header("last-modified") != nil)
        #expect(manifest.header("accept-ranges") == "bytes")
        #expect(try client.request("GET", "/manifest.json.sig").header("content-type") == "text/plain; charset=utf-8")
        let chunk = try client.request("GET", "/chunks/ab/abcdef", headers: [("Range", "bytes=100-199")])
        #expect(chunk.status == 206)
        #expect(chunk.header("content-type") == "application/octet-stream")
        #expect(chunk.header("content-range") == "bytes 100-199/10000")
        #expect(chunk.body == Array(sampleBytes(10_000)[100..<200]))
        // A resume whose If-Range is the file's ETag gets the rest; HEAD gets the headers only.
        let etag = try #require(chunk.header("etag"))
        let resumed = try client.request(
            "GET", "/chunks/ab/abcdef", headers: [("Range", "bytes=9000-"), ("If-Range", etag)])
        #expect(resumed.status == 206 && resumed.body == Array(sampleBytes(10_000)[9000...]))
        let head = try client.request("HEAD", "/packs/levels/1-0.bundle")
        #expect(head.status == 200 && head.body.isEmpty && head.header("content-length") == "3000")
        // Hostile and missing: a range past the end, a path with `..` (plain or encoded), a
        // folder, a file that is not there.
        let past = try client.request("GET", "/chunks/ab/abcdef", headers: [("Range", "bytes=10000-")])
        #expect(past.status == 416 && past.header("content-range") == "bytes */10000")
        #expect(try RawHTTPClient(port: port).request("GET", "/../../etc/passwd").status == 400)
        #expect(try RawHTTPClient(port: port).request("GET", "/chunks/%2e%2e/%2e%2e/manifest.json").status == 400)
        #expect(try client.request("GET", "/chunks").status == 404)
        #expect(try client.request("GET", "/packs/levels/2.json").status == 404)
        // A file published while it serves is served (files are read at each request).
        try directory.write("packs/levels/2.json", Array("{}".utf8))
        #expect(try client.request("GET", "/packs/levels/2.json").status == 200)

        server.signal(SIGINT)
        #expect(server.waitForTermination() == .exited(0))
        #expect(server.stdout.contains("stopped after"), "\(server.stdout)")
        #expect(throws: (any Error).self) { try RawHTTPClient(port: port) }
    }

    @Test("--fail-every N answers every Nth request with 503, a failing CDN")
    func failEvery() async throws {
        let directory = try Self.publishFolder()
        defer { directory.remove() }
        let (server, port) = try await Self.start(directory.path, ["--fail-every", "3"])
        defer { server.kill() }
        #expect(server.stdoutLines[0].contains("1 request in 3 fails with 503"), "\(server.stdout)")
        let client = try RawHTTPClient(port: port)
        var statuses: [Int] = []
        for _ in 0..<6 { statuses.append(try client.request("GET", "/manifest.json").status) }
        #expect(statuses == [200, 200, 503, 200, 200, 503])
        server.signal(SIGTERM)
        #expect(server.waitForTermination() == .exited(0))
    }

    @Test func refusesWhatItCannotServe() throws {
        let missing = try runProcessBlocking(Self.ba, ["pack", "serve", "/nonexistent/ba-pack-serve"])
        #expect(missing.status == 66, "\(missing.stderr)")
        let badPort = try runProcessBlocking(Self.ba, ["pack", "serve", "/tmp", "--port", "70000"])
        #expect(badPort.status == 64)
        let everyOne = try runProcessBlocking(Self.ba, ["pack", "serve", "/tmp", "--fail-every", "1"])
        #expect(everyOne.status == 64)
    }
}
