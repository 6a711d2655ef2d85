import ArgumentParser
import BAAssetServer
import Dispatch
import Foundation

/// `ba-asset-server`: serves a directory over loopback HTTP/1.1 for tests, demos and benchmarks.
///
/// Prints `listening on http://HOST:PORT` once bound, then serves until SIGTERM or SIGINT, shuts down cleanly
/// and exits 0. Usage errors exit 64.
@main
struct BAAssetServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ba-asset-server",
        abstract: "Serve a directory over HTTP/1.1 (GET, HEAD, byte ranges, keep-alive) for tests and benchmarks.")

    @Option(help: "The directory to serve (default: nothing but 404s).")
    var root: String?

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on; 0 picks a free one.")
    var port = 0

    @Option(
        help: ArgumentHelp(
            "Send every body at about this many bytes per second per connection, like a slow link (default: as fast as possible).",
            valueName: "bytes-per-second"))
    var rate: Int?

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be within 0...65535") }
        if let rate, rate < 1 { throw ValidationError("--rate must be at least 1 byte per second") }
        if let root {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue
            else { throw ValidationError("--root \(root) is not a directory") }
        }
    }

    func run() async throws {
        // Catch the signals before announcing the port, so a supervisor may send one right after reading it.
        let signals = TerminationSignals()
        let server = try await AssetServer.start(
            root: root.map { URL(fileURLWithPath: $0, isDirectory: true) }, host: host, port: port)
        if let rate { server.setDefaultBehavior(.trickle(bytesPerSecond: rate)) }
        // FileHandle writes are unbuffered: the line is out when this returns.
        FileHandle.standardOutput.write(Data("listening on \(server.baseURL)\n".utf8))
        await signals.next()
        try await server.shutdown()
    }
}

/// SIGTERM and SIGINT as an async event (their default action, dying at once, is replaced).
final class TerminationSignals {
    private let sources: [any DispatchSourceSignal]
    private let stream: AsyncStream<Int32>

    init() {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.stream = stream
        sources = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }

    /// Returns when the first signal arrives.
    func next() async {
        for await _ in stream { return }
    }
}
