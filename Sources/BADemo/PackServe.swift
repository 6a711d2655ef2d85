import ArgumentParser
import BAAssetServer
import BACommands
internal import CBASystem
import Foundation

/// `ba pack serve`: a publish folder over loopback HTTP, the local half of the test loop
/// (`ba packs override` points an installed app at it). Kept out of BACommands with `ba demo`,
/// so that the other commands do not link an HTTP server.
package struct PackServe: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Serve a publish folder on loopback, to test packs before a CDN has them.",
        discussion: """
            Serves PUBLISH_DIR at http://127.0.0.1:PORT (loopback only: no other machine can reach it) as a \
            CDN does: GET and HEAD, byte ranges (206, 416 past the end), ETag and Last-Modified (If-Range), \
            JSON as application/json, chunks and bundles as bytes, 404 for what is not there, 400 for a path \
            with `..`. Files are read at each request, so `ba pack build` and `ba pack publish` may run while \
            it serves. Prints its URL, then serves until SIGINT (Ctrl-C) or SIGTERM, and exits 0. Symbolic \
            links in the folder are followed: serve only a publish folder.

            --rate and --fail-every rehearse a slow or failing CDN. Then point an installed app at it with \
            `ba packs override APP URL/manifest.json` (docs/packs.md, "Testing packs locally").

            Examples:
              ba pack serve public --port 8080
              ba pack serve public --rate 200000 --fail-every 5
            """)

    @Argument(help: "The publish folder (`ba pack build -o`).")
    var folder: String

    @Option(help: "The port on 127.0.0.1; 0 (the default) picks a free one.")
    var port = 0

    @Option(
        help: ArgumentHelp(
            "Send every body at about this many bytes per second per connection.", valueName: "bytes-per-second"))
    var rate: Int?

    @Option(help: ArgumentHelp("Answer every Nth request with 503, as a failing CDN.", valueName: "n"))
    var failEvery: Int?

    package init() {}

    package func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be within 0...65535") }
        if let rate, rate < 1 { throw ValidationError("--rate must be at least 1 byte per second") }
        if let failEvery, failEvery < 2 {
            throw ValidationError("--fail-every must be 2 or more (1 would fail every request)")
        }
    }

    package func run() async throws {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            printError("\(folder) is not a folder: give the publish folder `ba pack build -o` wrote")
            throw ExitCode(BAExitCode.noInput.rawValue)
        }
        // The handler is in place before the URL is printed: a script may signal right after reading it.
        let signals = [SIGINT, SIGTERM]
        let signalPipe = ba_sys_signal_pipe(signals, Int32(signals.count))
        guard signalPipe >= 0 else {
            printError("cannot handle SIGINT and SIGTERM: \(String(cString: strerror(errno)))")
            throw ExitCode(BAExitCode.hostFailure.rawValue)
        }
        let server: AssetServer
        do {
            server = try await AssetServer.start(
                root: URL(fileURLWithPath: folder, isDirectory: true), host: "127.0.0.1", port: port)
        } catch {
            printError("cannot listen on 127.0.0.1:\(port): \(error)")
            throw ExitCode(BAExitCode.hostFailure.rawValue)
        }
        if let rate { server.setDefaultBehavior(.trickle(bytesPerSecond: rate)) }
        if let failEvery { server.setFailEvery(failEvery) }
        var notes: [String] = []
        if let rate { notes.append("\(rate) bytes/s") }
        if let failEvery { notes.append("1 request in \(failEvery) fails with 503") }
        if !FileManager.default.fileExists(atPath: folder + "/manifest.json") {
            notes.append("no manifest.json yet: `ba pack publish \(folder) --base-url \(server.baseURL)`")
        }
        FileHandle.standardOutput.write(
            Data(
                "serving \(folder) at \(server.baseURL)\(notes.isEmpty ? "" : " (\(notes.joined(separator: "; ")))")\n"
                    .utf8))
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                var byte: UInt8 = 0
                while read(signalPipe, &byte, 1) < 0 && errno == EINTR {}
                done.resume()
            }.start()
        }
        try? await server.shutdown()
        let count = server.requests.count
        FileHandle.standardOutput.write(Data("stopped after \(count) request(s)\n".utf8))
    }
}

/// `ba pack` with `serve`: BACommands' `pack` and its subcommands, and ``PackServe``.
package struct PackWithServe: ParsableCommand {
    package static let configuration: CommandConfiguration = {
        var configuration = BASubcommands.packConfiguration
        configuration.subcommands.append(PackServe.self)
        return configuration
    }()

    package init() {}
}
