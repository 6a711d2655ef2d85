import BAAssetServer
import BATestSupport
import Foundation
import Testing

/// `ba fetch` as a real process against the real loopback asset server.
@Suite(.timeLimit(.minutes(1))) struct FetchCommandTests {
    let ba = BuildProducts.executable("ba")

    func lines(_ output: ProcessOutput) -> [[String: Any]] {
        output.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    @Test func fetchesVerifiesAndResumes() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let data = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        server.setFile("/asset.bin", contents: data, etag: "\"v1\"")
        let head = try await runProcess(ba, ["fetch", server.url("/asset.bin"), "-o", directory.path, "--json"])
        #expect(head.status == 0, "\(head.stdout)\(head.stderr)")
        let summary = try #require(lines(head).last)
        #expect(summary["finished"] as? Int == 1 && summary["failed"] as? Int == 0)
        #expect(
            FileManager.default.contents(atPath: directory.url.appendingPathComponent("asset.bin").path) == Data(data))
        #expect(server.requests(for: "/asset.bin").count == 1)
        #expect(
            !FileManager.default.fileExists(atPath: directory.url.appendingPathComponent(".ba-partial").path),
            "nothing left to resume, so no partial folder")

        // A resumed run: cut the finished file back into a partial file with its validator.
        let partialDirectory = directory.url.appendingPathComponent("resume/.ba-partial")
        try FileManager.default.createDirectory(at: partialDirectory, withIntermediateDirectories: true)
        try Data(data.prefix(50_000)).write(to: partialDirectory.appendingPathComponent("asset.bin.part"))
        try "\"v1\"".write(
            to: partialDirectory.appendingPathComponent("asset.bin.part.validator"), atomically: true, encoding: .utf8)
        let resumed = try await runProcess(
            ba,
            ["fetch", server.url("/asset.bin"), "-o", directory.url.appendingPathComponent("resume").path, "--json"])
        #expect(resumed.status == 0, "\(resumed.stdout)\(resumed.stderr)")
        let results = try #require(lines(resumed).last?["results"] as? [[String: Any]])
        #expect(results.first?["receivedBytes"] as? Int == 150_000, "only the missing part: \(resumed.stdout)")
        #expect(server.requests(for: "/asset.bin").last?.header("Range") == "bytes=50000-")
        #expect(server.requests(for: "/asset.bin").last?.header("If-Range") == "\"v1\"")
        #expect(
            FileManager.default.contents(atPath: directory.url.appendingPathComponent("resume/asset.bin").path)
                == Data(data))
        #expect(!FileManager.default.fileExists(atPath: partialDirectory.path))
    }

    /// A queued transfer holds no file descriptor: 400 files fetched 4 at a time under
    /// `ulimit -n 64` (an engine that opened every partial file when it was added ran out at ~50).
    @Test func manyQueuedFilesFitInASmallDescriptorLimit() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var urls: [String] = []
        for index in 0..<400 {
            server.setFile("/f\(index).bin", contents: [UInt8](repeating: UInt8(index % 251), count: 1_000))
            urls.append(server.url("/f\(index).bin"))
        }
        let list = try directory.write("urls.txt", urls.joined(separator: "\n"))
        let output = try await runProcess(
            "/bin/sh",
            [
                "-c", "ulimit -n 64 && exec \"$0\" fetch --input-file \"$1\" -o \"$2\" --concurrency 4 --json", ba,
                list, directory.path + "/out",
            ])
        #expect(output.status == 0, "\(output.stderr.suffix(2000))")
        let summary = try #require(lines(output).last)
        #expect(summary["finished"] as? Int == 400 && summary["failed"] as? Int == 0, "\(summary)")
    }

    /// A forward proxy on loopback (Python's http.server): it answers GETs for absolute URLs by
    /// fetching them itself, and logs each URL it was asked for.
    static let proxyScript = """
        import http.server, sys, urllib.request
        log = open(sys.argv[1], "a", buffering=1)
        class Proxy(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                log.write(self.path + "\\n")
                with urllib.request.urlopen(urllib.request.Request(self.path), timeout=10) as upstream:
                    body = upstream.read()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *args): pass
        server = http.server.HTTPServer(("127.0.0.1", 0), Proxy)
        print(server.server_address[1], flush=True)
        server.timeout = 30
        server.handle_request()
        server.handle_request()
        """

    /// `http_proxy` / `no_proxy` in the environment are honoured (libcurl reads them; basd's
    /// engine is the same one `ba fetch` runs).
    @Test func theProxyVariablesAreHonoured() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let data = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        server.setFile("/via-proxy.bin", contents: data)
        let log = directory.path + "/proxy.log"
        let proxy = try ChildProcess("/usr/bin/env", ["python3", "-c", Self.proxyScript, log])
        defer { proxy.kill() }
        try await proxy.waiting("the proxy's port") { !$0.stdoutLines.isEmpty }
        let port = proxy.stdoutLines[0].trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Int(port) != nil, "the proxy printed \(port)")
        let url = server.url("/via-proxy.bin")

        let proxied = try await runProcess(
            ba, ["fetch", url, "-o", directory.path + "/a"], environment: ["http_proxy": "http://127.0.0.1:\(port)"])
        #expect(proxied.status == 0, "\(proxied.stderr)")
        #expect(FileManager.default.contents(atPath: directory.path + "/a/via-proxy.bin") == Data(data))
        #expect((try? String(contentsOfFile: log, encoding: .utf8))?.contains(url) == true, "the proxy saw it")
        #expect(server.requests(for: "/via-proxy.bin").count == 1, "once, from the proxy")

        let direct = try await runProcess(
            ba, ["fetch", url, "-o", directory.path + "/b"],
            environment: ["http_proxy": "http://127.0.0.1:\(port)", "no_proxy": "127.0.0.1"])
        #expect(direct.status == 0, "\(direct.stderr)")
        #expect(server.requests(for: "/via-proxy.bin").count == 2)
        let lines = (try? String(contentsOfFile: log, encoding: .utf8))?.split(separator: "\n") ?? []
        #expect(lines.count == 1, "no_proxy went around it: \(lines)")
    }

    @Test func failuresSayWhatTheServerDidAndExit20() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        server.setFile("/real.bin", contents: [1, 2, 3])
        server.setBehavior(.redirect(to: "http://localhost:\(server.port)/real.bin"), for: "/away.bin")
        let output = try await runProcess(
            ba,
            [
                "fetch", server.url("/away.bin"), server.url("/missing.bin"), "-o", directory.path, "--allow",
                "127.0.0.1",
            ])
        #expect(output.status == 20, "\(output.stdout)\(output.stderr)")
        #expect(output.stderr.contains("redirect hop 1"), "\(output.stderr)")
        #expect(output.stderr.contains("localhost"))
        #expect(output.stderr.contains("404"))

        let usage = try await runProcess(ba, ["fetch"])
        #expect(usage.status == 64)
        let help = try await runProcess(ba, ["fetch", "--help"])
        #expect(help.stdout.contains("Examples:"))
    }
}

/// `ba fetch` against the lying server of issue 19 (item 2): the connection drops mid-body, the file
/// changes, and the retry's 206 ignores `If-Range` with validators that do not repeat the partial
/// file's. The file must start over: the new version whole, never old prefix + new tail.
@Suite(.timeLimit(.minutes(1))) struct FetchResumeRuleTests {
    let ba = BuildProducts.executable("ba")

    @Test("ba fetch never splices a 206 that does not repeat every validator", arguments: ValidatorLie.all)
    func neverSpliced(lie: ValidatorLie) async throws {
        let (name, before, after) = (lie.name, lie.before, lie.after)
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let old = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let new = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
        server.setFile("/liar.bin", contents: old)
        server.setBehavior(
            .switchVersionAfterDrop(dropAfter: 100_000, before: before, after: after, newContents: new),
            for: "/liar.bin")
        let run = try await runProcess(ba, ["fetch", server.url("/liar.bin"), "-o", directory.path, "--json"])
        #expect(run.status == 0, "\(name): \(run.stdout)\(run.stderr)")
        let file = FileManager.default.contents(atPath: directory.url.appendingPathComponent("liar.bin").path)
        let whole = file == Data(new)
        #expect(whole, "\(name): old prefix + new tail spliced")
        let requests = server.requests(for: "/liar.bin")
        #expect(requests.count == 3, "\(name): \(requests)")
        #expect(requests.last?.header("Range") == nil, "\(name): the file starts over")
    }
}
