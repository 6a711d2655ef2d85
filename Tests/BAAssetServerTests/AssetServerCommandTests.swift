import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `ba-asset-server` run as a real process: announces its port, serves `--root`, stops cleanly on SIGTERM.
@Suite struct AssetServerCommandTests {
    /// The built executable, beside this test binary.
    static let executable = BuildProducts.executable("ba-asset-server")

    /// Starts the server on a port the kernel picks (or `port`); returns it and its first line.
    static func start(_ arguments: [String], port: Int = 0) async throws -> (ChildProcess, String) {
        let server = try ChildProcess(executable, arguments + ["--port", String(port)])
        do {
            // The first line; it is there as soon as the server has written it.
            try await server.waiting("its listening line") { !$0.stdoutLines.isEmpty }
        } catch {
            server.kill()
            throw error
        }
        return (server, server.stdoutLines[0])
    }

    @Test func servesRootUntilSIGTERM() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("hello.bin", sampleBytes(5000))

        // On a port no parallel test's server can take once this one frees it (TestPorts).
        var started: (ChildProcess, String)?
        for _ in 0..<50 where started == nil {
            // A port in use: the server says so and exits (the wait throws); try another.
            if let (candidate, line) = try? await Self.start(
                ["--root", directory.url.path], port: TestPorts.toCheckFreed())
            {
                if line.hasPrefix("listening on") { started = (candidate, line) } else { candidate.kill() }
            }
        }
        let (server, text) = try #require(started)
        defer { server.kill() }
        let prefix = "listening on http://127.0.0.1:"
        #expect(text.hasPrefix(prefix), "\(text)")
        let port = try #require(Int(text.dropFirst(prefix.count).prefix { $0.isNumber }))

        let response = try RawHTTPClient(port: port).request("GET", "/hello.bin", headers: [("Range", "bytes=10-19")])
        #expect(response.status == 206)
        #expect(response.body == Array(sampleBytes(5000)[10..<20]))

        server.signal(SIGTERM)
        #expect(server.waitForTermination() == .exited(0))
        #expect(throws: (any Error).self) { try RawHTTPClient(port: port) }
    }

    @Test("--rate slows every body down, like a slow link")
    func rate() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("slow.bin", sampleBytes(30_000))
        let (server, text) = try await Self.start(["--root", directory.url.path, "--rate", "20000"])
        defer { server.kill() }
        let port = try #require(Int(text.dropFirst("listening on http://127.0.0.1:".count).prefix { $0.isNumber }))
        let started = ContinuousClock.now
        let response = try RawHTTPClient(port: port).request("GET", "/slow.bin", headers: [])
        #expect(response.body == sampleBytes(30_000))
        // 30 000 bytes at 20 000 bytes a second: about 1.5 s, never much less.
        #expect(ContinuousClock.now - started > .milliseconds(1200))
    }

    @Test func usageErrorsExit64() throws {
        let run = try runProcessBlocking(Self.executable, ["--root", "/nonexistent/ba-asset-server-test"])
        #expect(run.status == 64)
    }
}
