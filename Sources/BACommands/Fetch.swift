import ArgumentParser
import BADownloadEngine
import Foundation

import enum BADaemonProtocol.ReleaseVersion

#if canImport(Glibc)
    import Glibc
#endif

/// `ba fetch`: the download engine from the command line, with no daemon.
struct Fetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Download URLs with the Background Assets download engine (no daemon), for debugging and benchmarks.",
        discussion: """
            Each URL is saved under the output directory by the last component of its path. A partial
            file (.ba-partial/NAME.part) left by an interrupted run is resumed with a validated range request.

            Examples:
              ba fetch https://cdn.example.com/level-1.pak -o assets/
              ba fetch http://127.0.0.1:8000/a.bin --sha256 9f86d0… --foreground --json
              ba fetch --input-file urls.txt -o out/ --concurrency 16
            """)

    @Argument(help: "The URLs to download (https, or http to a loopback host).")
    var urls: [String] = []

    @Option(name: .customLong("input-file"), help: "A file with one URL per line (blank lines and # comments skipped).")
    var inputFile: String?

    @Option(name: [.customShort("o"), .customLong("output")], help: "The output directory.")
    var output: String = "."

    @Option(help: "The SHA-256 (hex) the file must have (only with a single URL).")
    var sha256: String?

    @Option(help: "The exact size in bytes the file must have (only with a single URL).")
    var expectedSize: Int64?

    @Flag(help: "Run as foreground transfers: start at once, fail fast on connectivity errors.")
    var foreground = false

    @Option(help: "Background transfers at once.")
    var concurrency: Int = 4

    @Flag(
        help:
            "fsync each file before moving it into place (durable across power loss, as basd does; slower for many small files)."
    )
    var sync = false

    @Option(
        name: .customLong("allow"),
        help: "Allowed host (repeatable; '*.example.com' for subdomains), checked on every redirect hop.")
    var allowedHosts: [String] = []

    @Option(help: "USER:PASSWORD for HTTP authentication.")
    var user: String?

    @Option(help: "A PEM file of CA certificates to trust.")
    var cacert: String?

    @Option(help: "A pinned public key (sha256//BASE64).")
    var pinnedPublicKey: String?

    @Flag(help: "Print events as JSON lines and a JSON summary instead of a progress bar.")
    var json = false

    func validate() throws {
        guard concurrency > 0 else { throw ValidationError("--concurrency must be positive") }
        if urls.isEmpty && inputFile == nil { throw ValidationError("give at least one URL or --input-file") }
        if (sha256 != nil || expectedSize != nil) && (urls.count != 1 || inputFile != nil) {
            throw ValidationError("--sha256 and --expected-size go with a single URL")
        }
        if let user, !user.contains(":") { throw ValidationError("--user is USER:PASSWORD") }
    }

    func run() async throws {
        var all = urls
        if let inputFile {
            guard let text = try? String(contentsOfFile: inputFile, encoding: .utf8) else {
                FileHandle.standardError.write(Data("ba: cannot read \(inputFile)\n".utf8))
                throw ExitCode(BAExitCode.noInput.rawValue)
            }
            // Plain byte trimming: Foundation's trimmingCharacters costs ~10 µs a line, and
            // trimming Characters (grapheme clusters) from both ends about as much.
            all += text.split(separator: "\n").map { String(Self.trimmed($0)) }.filter {
                !$0.isEmpty && !$0.hasPrefix("#")
            }
        }
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        var requests: [DownloadRequest] = []
        var names = Set<String>()
        let credential = user.map { value -> DownloadRequest.Credential in
            let parts = value.split(separator: ":", maxSplits: 1)
            return .init(user: String(parts[0]), password: parts.count > 1 ? String(parts[1]) : "")
        }
        for (index, url) in all.enumerated() {
            let name = Self.fileName(for: url, index: index)
            guard names.insert(name).inserted else {
                throw ValidationError(
                    "two URLs would both be saved as '\(name)'; fetch them into different directories")
            }
            requests.append(
                DownloadRequest(
                    id: url, url: url, destination: (output as NSString).appendingPathComponent(name),
                    expectedSize: expectedSize, sha256: sha256, isForeground: foreground,
                    allowList: allowedHosts.isEmpty ? nil : HostAllowList(allowedHosts), credential: credential,
                    trust: .init(caFile: cacert, pinnedPublicKey: pinnedPublicKey)))
        }
        var configuration = DownloadEngine.Configuration()
        configuration.backgroundConcurrency = concurrency
        configuration.durable = sync
        // Servers and proxies log who fetched; basd sends basd/VERSION the same way.
        configuration.userAgent = Self.userAgent
        let engine = DownloadEngine(configuration: configuration)
        Interrupt.onSignal { engine.shutdown() }
        for request in requests { engine.add(request) }

        var reporter = FetchReporter(count: requests.count, json: json, terminal: isatty(STDERR_FILENO) == 1)
        var pending = Set(requests.map(\.id))
        for await event in engine.events {
            reporter.record(event)
            switch event {
            case .finished(let id, _, _, _, _), .failed(let id, _):
                pending.remove(id)
            case .needsCredentials(let id, _):
                // No one to ask on the command line: --user is the way to give credentials.
                engine.respond(to: id, with: .cancel)
            default:
                break
            }
            if pending.isEmpty { break }
        }
        engine.shutdown()
        // The engine's partial files live in OUTPUT/.ba-partial; once nothing is left to resume,
        // the folder goes too (rmdir removes it only when empty, so a kept partial file keeps it).
        _ = rmdir((output as NSString).appendingPathComponent(".ba-partial"))
        reporter.finish(interrupted: !pending.isEmpty)
        if !pending.isEmpty { throw ExitCode(BAExitCode.interrupted.rawValue) }
        if reporter.failures > 0 { throw ExitCode(BAExitCode.downloadFailed.rawValue) }
    }

    /// The `User-Agent` of `ba fetch`'s requests (a `--header`-less tool: nothing overrides it).
    static let userAgent = "ba/\(ReleaseVersion.string) (swift-background-assets)"

    /// `line` without the spaces, tabs and carriage returns around it, looked at as bytes.
    static func trimmed(_ line: Substring) -> Substring {
        let isBlank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
        guard let first = line.utf8.firstIndex(where: { !isBlank($0) }),
            let last = line.utf8.lastIndex(where: { !isBlank($0) })
        else { return "" }
        return line[first...last]
    }

    static func fileName(for url: String, index: Int) -> String {
        let path = URL(string: url)?.path ?? ""
        let last = (path as NSString).lastPathComponent
        return last.isEmpty || last == "/" || last == ".." || last == "." ? "download-\(index)" : last
    }
}

/// Prints progress (a bar on a terminal) or JSON lines, and the summary.
struct FetchReporter {
    let count: Int
    let json: Bool
    let terminal: Bool
    var written: [String: Int64] = [:]
    var totals: [String: Int64] = [:]
    var finished = 0
    var failures = 0
    var lastDraw = ContinuousClock.now - .seconds(1)
    let started = ContinuousClock.now
    var receivedBytes: Int64 = 0
    var results: [[String: Any]] = []

    init(count: Int, json: Bool, terminal: Bool) {
        self.count = count
        self.json = json
        self.terminal = terminal
    }

    mutating func record(_ event: DownloadEvent) {
        switch event {
        case .progress(let id, let bytes, let total):
            written[id] = bytes
            if let total { totals[id] = total }
        case .finished(let id, let path, let size, let sha, let received):
            finished += 1
            written[id] = size
            totals[id] = size
            receivedBytes += received
            results.append([
                "url": id, "path": path, "size": size, "sha256": sha, "receivedBytes": received, "ok": true,
            ])
            if !json && !terminal { print("finished \(path) (\(size) bytes)") }
        case .failed(let id, let error):
            failures += 1
            let message = Self.message(error)
            results.append(["url": id, "ok": false, "error": error.code.rawValue, "message": message])
            let line = "failed \(id): \(message)"
            if !json { FileHandle.standardError.write(Data(((terminal ? "\r\u{1B}[K" : "") + line + "\n").utf8)) }
        case .retrying(let id, let attempt, let delay, let reason):
            if !json {
                FileHandle.standardError.write(
                    Data(
                        ((terminal ? "\r\u{1B}[K" : "")
                            + "retrying \(id) (attempt \(attempt + 1)) in \(delay): \(reason)\n").utf8))
            }
        default:
            break
        }
        if json {
            print(Self.json(event))
        } else if terminal {
            draw()
        }
    }

    mutating func draw(force: Bool = false) {
        let now = ContinuousClock.now
        guard force || now - lastDraw >= .milliseconds(100) else { return }
        lastDraw = now
        let done = written.values.reduce(0, +)
        let total = totals.values.reduce(0, +)
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 0
        let elapsed = (now - started).seconds
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        let bar = HumanReadable.bar(fraction)
        let line = String(
            format: "\r\u{1B}[K[%@] %3.0f%%  %@ / %@  %d of %d files  %@/s", bar, fraction * 100, Self.size(done),
            Self.size(total),
            finished, count, Self.size(Int64(rate)))
        FileHandle.standardError.write(Data(line.utf8))
    }

    mutating func finish(interrupted: Bool) {
        let elapsed = ContinuousClock.now - started
        let seconds = elapsed.seconds
        if json {
            let summary: [String: Any] = [
                "summary": true, "finished": finished, "failed": failures, "interrupted": interrupted,
                "seconds": seconds, "receivedBytes": receivedBytes, "results": results,
            ]
            if let data = try? JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys]) {
                print(String(decoding: data, as: UTF8.self))
            }
            return
        }
        if terminal {
            draw(force: true)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        print(
            String(
                format: "%d of %d downloaded in %.2f s%@", finished, count, seconds,
                interrupted ? " (interrupted: partial files kept for a resume)" : ""))
    }

    static func size(_ bytes: Int64) -> String { HumanReadable.bytes(bytes) }

    /// The engine's message, and for a TLS failure the flag that fixes it.
    static func message(_ error: DownloadError) -> String {
        guard
            let hint = error.hint(
                trustingACA: "pass its certificate with --cacert FILE.pem", pinnedKey: "--pinned-public-key")
        else { return error.message }
        return error.message + "; " + hint
    }

    static func json(_ event: DownloadEvent) -> String {
        var object: [String: Any]
        switch event {
        case .began(let id, let offset, let foreground):
            object = ["event": "began", "id": id, "offset": offset, "foreground": foreground]
        case .paused(let id, let bytes): object = ["event": "paused", "id": id, "bytesOnDisk": bytes]
        case .progress(let id, let bytes, let total):
            object = ["event": "progress", "id": id, "bytesWritten": bytes]
            if let total { object["totalBytes"] = total }
        case .validator(let id, let value): object = ["event": "validator", "id": id, "value": value]
        case .retrying(let id, let attempt, let delay, let reason):
            object = [
                "event": "retrying", "id": id, "attempt": attempt,
                "delaySeconds": delay.seconds,
                "reason": reason,
            ]
        case .needsCredentials(let id, let challenge):
            object = ["event": "needsCredentials", "id": id, "challenge": challenge]
        case .finished(let id, let path, let size, let sha, let received):
            object = [
                "event": "finished", "id": id, "path": path, "size": size, "sha256": sha, "receivedBytes": received,
            ]
        case .failed(let id, let error):
            object = ["event": "failed", "id": id, "error": error.code.rawValue, "message": message(error)]
            if let status = error.httpStatus { object["httpStatus"] = status }
        case .serverWaiting(let server, let reason, let next, let waiting):
            object = [
                "event": "serverWaiting", "server": server, "reason": reason, "nextProbeSeconds": next.seconds,
                "waiting": waiting,
            ]
        case .serverAnswered(let server, let released, let downFor):
            object = [
                "event": "serverAnswered", "server": server, "released": released, "downSeconds": downFor.seconds,
            ]
        }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            return "{}"
        }
        return String(decoding: data, as: UTF8.self)
    }
}
