import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `ba-asset-server` run as a real process: announces its port, serves `--root`, stops cleanly on SIGTERM.
@Suite struct AssetServerCommandTests {
    /// The built executable, beside this test binary.
    static var executable: URL {
        let me =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("ba-asset-server")
    }

    @Test func servesRootUntilSIGTERM() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("hello.bin", sampleBytes(5000))

        let process = Process()
        process.executableURL = Self.executable
        process.arguments = ["--root", directory.url.path, "--port", "0"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        // The first line; the read returns as soon as the server has written it (or at EOF if it died).
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        let prefix = "listening on http://127.0.0.1:"
        #expect(text.hasPrefix(prefix), "\(text)")
        let port = try #require(Int(text.dropFirst(prefix.count).prefix { $0.isNumber }))

        let response = try RawHTTPClient(port: port).request("GET", "/hello.bin", headers: [("Range", "bytes=10-19")])
        #expect(response.status == 206)
        #expect(response.body == Array(sampleBytes(5000)[10..<20]))

        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
        #expect(throws: (any Error).self) { try RawHTTPClient(port: port) }
    }

    @Test("--rate slows every body down, like a slow link")
    func rate() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("slow.bin", sampleBytes(30_000))
        let process = Process()
        process.executableURL = Self.executable
        process.arguments = ["--root", directory.url.path, "--port", "0", "--rate", "20000"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        let port = try #require(Int(text.dropFirst("listening on http://127.0.0.1:".count).prefix { $0.isNumber }))
        let started = ContinuousClock.now
        let response = try RawHTTPClient(port: port).request("GET", "/slow.bin", headers: [])
        #expect(response.body == sampleBytes(30_000))
        // 30 000 bytes at 20 000 bytes a second: about 1.5 s, never much less.
        #expect(ContinuousClock.now - started > .milliseconds(1200))
    }

    @Test func usageErrorsExit64() throws {
        let process = Process()
        process.executableURL = Self.executable
        process.arguments = ["--root", "/nonexistent/ba-asset-server-test"]
        process.standardError = Pipe()
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 64)
    }
}
