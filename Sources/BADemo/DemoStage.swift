import BAAssetServer
import BACommands
import BADaemonProtocol
import BADownloadEngine
import BAHashing
internal import CBASystem
import Foundation
import Synchronization

/// The demo's moving parts, in a temporary folder: the asset server (in this process), basd and
/// the sample app (child processes), and the steps that drive them.
final class DemoStage: Sendable {
    let products: DemoProducts
    let rate: Int
    let folder: String
    var stateDirectory: String { folder + "/state" }
    var socketPath: String { folder + "/basd.sock" }
    var appDirectory: String { folder + "/SampleApp" }
    var basdLog: String { folder + "/basd.log" }
    let started = Date()

    static let bundleIdentifier = "com.example.ba.sample"
    static let appGroupIdentifier = "group.com.example.ba.sample"
    static let steps = 9

    /// Who ends the demo: its steps (they ended, well or not) or an interruption, whichever
    /// claims it first; the other stands down, so a run ends in exactly one way.
    enum Ending {
        case steps
        case interruption
    }

    /// Why the demo is interrupted.
    enum Interruption {
        case signal(Int32)
        /// Standard output was closed (`ba demo | head`): stop quietly.
        case outputClosed
    }

    private struct Parts {
        var server: AssetServer?
        var basd: DemoChild?
        var children: [DemoChild] = []
        var ending: Ending?
        var interrupted: Bool { ending == .interruption }
    }
    private let parts = Mutex(Parts())

    init(products: DemoProducts, rate: Int) throws {
        self.products = products
        self.rate = rate
        var template = Array((NSTemporaryDirectory() + "/ba-demo-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw DemoFailure(message: "cannot create a temporary folder in \(NSTemporaryDirectory())")
        }
        folder = URL(fileURLWithPath: String(cString: made)).standardizedFileURL.path
    }

    // MARK: - The steps

    func run() async throws {
        let (server, assets) = try await serve()
        let packs = try await publishPacks(server: server, assets: assets)
        try await startBasd()
        try await install(server: server, publicKey: packs.publicKey)
        let underway = try await waitForTheCatalog(assets)
        try await launchTheApp(underway, server: server, assets: assets)
        let events = PackEventLog()
        let subscription = try subscribeToPackEvents(events)
        defer { subscription.close() }
        try await ensureOnDemand(events)
        let delta = try await updateLevels(server: server, published: packs, events: events)
        try verify(assets, delta: delta)
    }

    /// Step 1: the loopback asset server: the extension's assets from memory, and the packs'
    /// publish folder (step 2 fills it) from disk, with the download manifest.
    private func serve() async throws -> (AssetServer, DemoAssets) {
        let server: AssetServer
        let assets: DemoAssets
        do {
            try inFolder {
                try FileManager.default.createDirectory(atPath: publishFolder, withIntermediateDirectories: true)
            }
            server = try await AssetServer.start(root: URL(fileURLWithPath: publishFolder))
            parts.withLock { $0.server = server }
            assets = try DemoAssets(appDirectory: products.examples + "/SampleApp", baseURL: server.baseURL)
        } catch {
            throw DemoFailure(message: "cannot serve the sample app's assets: \(error)")
        }
        for asset in assets.assets {
            server.setFile(asset.path, contents: asset.bytes)
            if !asset.essential { server.setBehavior(.trickle(bytesPerSecond: rate), for: asset.path) }
        }
        step(1, "Serving the sample app on \(server.baseURL) (loopback HTTP)")
        note("non-essential assets go at \(HumanReadable.bytes(Int64(rate)))/s per connection, like a slow link")
        var table = TextTable(["ASSET", "SIZE", "LISTED IN", "URL PATH"])
        for asset in assets.assets {
            table.append([
                asset.identifier, HumanReadable.bytes(Int64(asset.bytes.count)),
                asset.fromCatalog ? "catalog" : asset.essential ? "manifest (essential)" : "manifest",
                asset.path,
            ])
        }
        say(table.render().split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        return (server, assets)
    }

    /// Step 2: basd as a child, one background transfer at a time so there is a queue to see, and
    /// downloads from this machine only (the demo's server is on loopback).
    private func startBasd() async throws {
        let log = try inFolder {
            let manager = FileManager.default
            try manager.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
            try Data(
                #"{"backgroundDownloadConcurrency": 1, "allowedHosts": ["127.0.0.1", "localhost", "::1"]}"#.utf8
            )
            .write(to: URL(fileURLWithPath: stateDirectory + "/config.json"))
            _ = manager.createFile(atPath: basdLog, contents: nil)
            return try FileHandle(forWritingTo: URL(fileURLWithPath: basdLog))
        }
        defer { try? log.close() }
        let basd = try await spawn(
            // --config: this file, never the user's (BA_CONFIG, ~/.config/background-assets); and
            // not the apps registered in the user's drop-in folders.
            products.basd,
            [
                "--state-dir", stateDirectory, "--socket", socketPath, "--config", stateDirectory + "/config.json",
                "--no-app-discovery",
            ],
            output: log.fileDescriptor, isBasd: true)
        // Bounded: basd either answers, exits, or is given up on after 20 s.
        let deadline = Date(timeIntervalSinceNow: 20)
        while (try? connect())?.client.close() == nil {
            guard basd.isRunning, Date() < deadline else {
                throw DemoFailure(message: "basd did not start; its log: \(basdLog)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        step(3, "basd is running (pid \(basd.pid))")
        note("state: \(stateDirectory)/state.sqlite, settings: \(stateDirectory)/config.json, log: \(basdLog)")
        note(
            "config.json: one background transfer at a time, so there is a queue to promote from; "
                + "downloads from this machine only (allowedHosts)")
    }

    /// Step 4: `ba install` of a copy of the sample app whose manifest URL points at the server,
    /// with the packs' public key; its essential pack comes before `ba install` returns.
    private func install(server: AssetServer, publicKey: String) async throws {
        let source = URL(fileURLWithPath: products.examples + "/SampleApp/Info.plist")
        guard
            var info = try PropertyListSerialization.propertyList(from: Data(contentsOf: source), format: nil)
                as? [String: Any]
        else { throw DemoFailure(message: "\(source.path) is not a dictionary") }
        info["BAManifestURL"] = server.url("/manifest.json")
        info["BAAssetPackPublicKey"] = publicKey
        let plist = try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
        try inFolder {
            let manager = FileManager.default
            try manager.createDirectory(atPath: appDirectory + "/lib", withIntermediateDirectories: true)
            try plist.write(to: URL(fileURLWithPath: appDirectory + "/Info.plist"))
            try manager.createSymbolicLink(
                atPath: appDirectory + "/lib/libSampleSwiftExtension.so", withDestinationPath: products.sampleExtension)
        }

        step(4, "ba install \(appDirectory)")
        note("basd fetches the manifest (signed: BAAssetPackPublicKey), starts the essential pack base and the")
        note("prefetch pack levels, runs the extension's downloads(for: .install) in a runner process, and ba")
        note("waits for the essential downloads and the essential pack:")
        let install = try await spawn(products.ba, ["install", appDirectory, "--socket", socketPath])
        guard let status = await install.wait(seconds: 120), status == 0 else {
            throw DemoFailure(message: "ba install failed; basd's log: \(basdLog)")
        }
        let packs = try packs()
        // Apple's rule for an essential pack: local before the install returns.
        guard packs.first(where: { $0.assetPackID == "base" })?.localVersion != nil else {
            throw DemoFailure(
                message: "the essential pack base was not local when ba install returned; basd's log: \(basdLog)")
        }
        note("the app's asset packs now: base came before ba install returned, levels goes on in the background,")
        note("extras waits to be asked for:")
        printPacks(packs)
    }

    /// Step 5: the catalog finished while no app was running, so basd woke the extension, which
    /// read it under exclusive control and scheduled the catalog's assets. Then, so that the app
    /// promotes a transfer under way, until a background download has some bytes on disk.
    private func waitForTheCatalog(_ assets: DemoAssets) async throws -> Underway? {
        let wanted = Set(assets.assets.filter(\.fromCatalog).map(\.identifier))
        let deadline = Date(timeIntervalSinceNow: 30)
        var rows: [DownloadRow] = []
        while !wanted.isSubset(of: Set(rows.map(\.identifier))) {
            guard Date() < deadline else {
                throw DemoFailure(
                    message:
                        "the extension did not schedule the catalog's assets (\(wanted.sorted().joined(separator: ", "))) "
                        + "within 30 s; basd's log: \(basdLog)")
            }
            try await Task.sleep(for: .milliseconds(50))
            rows = try downloads()
        }
        step(5, "The catalog arrived; basd woke the extension, which scheduled the catalog's assets")
        note("the extension's calls since the install, from basd's log:")
        for line in extensionLog().dropFirst() { note("  " + line) }
        let underway = try await waitForBytesInTheBackground(assets)
        rows = try downloads()
        if let underway, let index = rows.firstIndex(where: { $0.identifier == underway.identifier }) {
            // basd records progress once a second; its events are newer.
            rows[index].bytesOnDisk = max(rows[index].bytesOnDisk, underway.bytes)
        }
        printDownloads(rows)
        return underway
    }

    /// A background download with bytes on disk when the app is launched.
    struct Underway {
        var identifier: String
        var bytes: Int64
        var total: Int64?
    }

    /// Waits, at most 10 s, until a non-essential download has a little on disk (512 KiB, or a
    /// quarter of a second at `--rate`), from basd's progress events; nil if none got there.
    private func waitForBytesInTheBackground(_ assets: DemoAssets) async throws -> Underway? {
        let background = Set(assets.assets.filter { !$0.essential }.map(\.identifier))
        let threshold = Int64(min(512 << 10, rate / 4))
        let first = FirstProgress()
        let client: DaemonClient
        do {
            client = try DaemonClient(
                socketPath: socketPath, client: ClientInfo(role: .cli, pid: getpid()),
                onEvent: { event in
                    guard background.contains(event.identifier) else { return }
                    switch event.kind {
                    case .progress where (event.bytesWritten ?? 0) >= threshold:
                        let bytes = event.bytesWritten ?? 0
                        first.found(Underway(identifier: event.identifier, bytes: bytes, total: event.totalBytes))
                    case .finished, .failed: first.found(nil)  // too late to promote one under way
                    default: break
                    }
                })
            guard case .ok = try client.call(.subscribeEvents) else {
                throw DemoFailure(message: "basd answered subscribeEvents with something else")
            }
        } catch let failure as DemoFailure {
            throw failure
        } catch {
            throw DemoFailure(message: "cannot follow basd's events: \(error); basd's log: \(basdLog)")
        }
        defer { client.close() }
        // What happened before the subscription: no event will tell.
        for row in try downloads() where background.contains(row.identifier) {
            if row.state == "finished" || row.state == "failed" {
                first.found(nil)
            } else if row.bytesOnDisk >= threshold {
                first.found(Underway(identifier: row.identifier, bytes: row.bytesOnDisk, total: row.fileSize))
            }
        }
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: first.wait(seconds: 10)) }
        }
    }

    /// The first background download seen with enough bytes (or nil: one ended first), from the
    /// event reader thread to the waiting one.
    private final class FirstProgress: Sendable {
        private let value = Mutex<Underway??>(nil)
        private let arrived = DispatchSemaphore(value: 0)

        func found(_ underway: Underway?) {
            let isFirst = value.withLock { value in
                guard value == nil else { return false }
                value = .some(underway)
                return true
            }
            if isFirst { arrived.signal() }
        }

        func wait(seconds: Double) -> Underway? {
            _ = arrived.wait(timeout: .now() + seconds)
            return value.withLock { $0 ?? nil }
        }
    }

    /// What the app's extension logged, in order, from basd's log (paths in the container shortened).
    private func extensionLog() -> [String] {
        let prefix = "[\(Self.bundleIdentifier) extension] "
        let container = stateDirectory + "/groups/" + Self.appGroupIdentifier + "/"
        let text = (try? String(contentsOfFile: basdLog, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: prefix) else { return nil }
            return line[range.upperBound...].replacingOccurrences(of: container, with: "CONTAINER/")
        }
    }

    /// Step 6: the sample app, which promotes and collects.
    private func launchTheApp(_ underway: Underway?, server: AssetServer, assets: DemoAssets) async throws {
        step(6, "Launching the sample app (\(products.sampleApp))")
        if let underway {
            let progress = Self.bytes(underway.bytes, of: underway.total)
            note("\(underway.identifier) is under way in the background (\(progress)); promoted, it goes on from there")
        }
        let app = try await spawn(products.sampleApp, [appDirectory], environment: ["BA_SOCKET": socketPath])
        guard let status = await app.wait(seconds: 150) else {
            await app.stop()
            throw DemoFailure(message: "the sample app did not finish within 150 s")
        }
        guard status == 0 else { throw DemoFailure(message: "the sample app exited \(status); basd's log: \(basdLog)") }
        printDownloads(try downloads())
        // The proof that the promotion lost no bytes: the foreground transfer asked the server for
        // the rest of the file only.
        if let underway, let asset = assets.assets.first(where: { $0.identifier == underway.identifier }),
            let range = server.requests(for: asset.path).compactMap({ $0.header("range") }).last,
            let from = range.firstMatch(of: /^bytes=(\d+)-$/).flatMap({ Int64($0.1) })
        {
            note(
                "\(asset.identifier) was promoted at \(Self.bytes(from, of: Int64(asset.bytes.count))): "
                    + "then basd asked the server for the rest only (Range: \(range))")
        }
    }

    private static func bytes(_ bytes: Int64, of total: Int64?) -> String {
        HumanReadable.bytes(bytes) + " of " + (total.map(HumanReadable.bytes) ?? "?")
    }

    /// Step 9: every asset in the app group container, checked against what the server sent, and
    /// every pack file against its index (basd's `packs verify`).
    private func verify(_ assets: DemoAssets, delta: Delta) throws {
        let container = stateDirectory + "/groups/" + Self.appGroupIdentifier
        step(9, "Where everything is: \(container)")
        var table = TextTable(["FILE", "SIZE", "SHA-256", "CHECK"])
        var problems: [String] = []
        for asset in assets.assets {
            let path = container + "/Assets/" + asset.identifier
            let relative = "Assets/" + asset.identifier
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                let size = (attributes[.size] as? NSNumber)?.int64Value
            else {
                table.append([relative, "-", "-", "MISSING"])
                problems.append("\(relative) is missing")
                continue
            }
            let digest = (try? SHA256Hasher.hex(ofFileAt: path)) ?? "unreadable"
            let good = size == Int64(asset.bytes.count) && digest == asset.sha256
            table.append([relative, HumanReadable.bytes(size), String(digest.prefix(16)) + "…", good ? "ok" : "WRONG"])
            if !good { problems.append("\(relative) differs from what the server sent") }
        }
        say(table.render().split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        note("the asset packs, read by basd against their indexes (what `ba packs verify` asks):")
        let packs = try verifyPacks()
        problems += packs.problems
        guard problems.isEmpty else { throw DemoFailure(message: problems.joined(separator: "; ")) }
        let seconds = String(format: "%.1f", Date().timeIntervalSince(started))
        say(
            "\n\(assets.assets.count) of \(assets.assets.count) assets and \(packs.files) of \(packs.files) pack files "
                + "(\(Self.packIDs.count) packs) verified by SHA-256 in the app group container; \(delta.line) "
                + "(\(seconds) s).")
    }

    // MARK: - Parts

    /// Starts a child; refused once the demo is interrupted (the interruption stops the children it
    /// knows of, so none may start after it).
    func spawn(
        _ path: String, _ arguments: [String], environment: [String: String] = [:], output: Int32 = 1,
        isBasd: Bool = false
    ) async throws -> DemoChild {
        let child = try await DemoChild(
            path, arguments, environment: environment, output: output, error: output == 1 ? 2 : output)
        let kept = parts.withLock { parts in
            guard !parts.interrupted else { return false }
            if isBasd { parts.basd = child } else { parts.children.append(child) }
            return true
        }
        guard kept else {
            child.stopBlocking()
            throw DemoFailure(message: "interrupted")
        }
        return child
    }

    /// Runs `body`, which writes in the folder, unless the demo is interrupted: the interruption
    /// waits for it before removing the folder, so nothing is written there afterwards.
    func inFolder<T>(_ body: () throws -> T) throws -> T {
        try parts.withLock { parts in
            guard !parts.interrupted else { throw DemoFailure(message: "interrupted") }
            return try body()
        }
    }

    func connect() throws -> DaemonSession {
        DaemonSession(
            client: try DaemonClient(socketPath: socketPath, client: ClientInfo(role: .cli, pid: getpid())))
    }

    func downloads() throws -> [DownloadRow] {
        do {
            let session = try connect()
            defer { session.client.close() }
            guard case .downloads(let infos) = try session.client.call(.listDownloads(app: Self.bundleIdentifier))
            else { throw DemoFailure(message: "basd answered listDownloads with something else") }
            return infos.map(DownloadRow.init).sorted { $0.identifier < $1.identifier }
        } catch let failure as DemoFailure {
            throw failure
        } catch {
            throw DemoFailure(message: "cannot list basd's downloads: \(error); basd's log: \(basdLog)")
        }
    }

    private func printDownloads(_ rows: [DownloadRow]) {
        var table = TextTable(["DOWNLOAD", "STATE", "BYTES", "ESSENTIAL", "FOREGROUND"])
        for row in rows {
            table.append([
                row.identifier, row.state,
                HumanReadable.bytes(row.bytesOnDisk) + " / " + (row.fileSize.map(HumanReadable.bytes) ?? "?"),
                row.essential ? "yes" : "no", row.foreground ? "yes" : "no",
            ])
        }
        say(table.render().split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
    }

    func step(_ number: Int, _ title: String) {
        let seconds = String(format: "%5.1f s", Date().timeIntervalSince(started))
        say("\n==> \(number)/\(Self.steps) \(title)   [\(seconds)]")
    }

    func note(_ line: String) { say("    " + line) }

    /// Writes a line to stdout at once (unbuffered), so the demo's lines and its children's, which
    /// share the terminal or pipe, come out in the order they happen. Nothing once interrupted; a
    /// closed stdout (EPIPE: SIGPIPE is ignored) interrupts the demo, which cleans up quietly.
    func say(_ line: String) {
        guard !parts.withLock({ $0.interrupted }) else { return }
        if ba_sys_write_all(1, line + "\n", line.utf8.count + 1) != 0 && errno == EPIPE { interrupt(.outputClosed) }
    }

    /// Writes `ba: message` to stderr; errors are ignored (stderr may be a closed pipe too).
    static func sayError(_ message: String) {
        let line = "ba: \(message)\n"
        _ = ba_sys_write_all(2, line, line.utf8.count)
    }

    /// Whether stdout is a pipe whose reader has gone (a child writing there dies of SIGPIPE
    /// before `ba` writes and finds out).
    var outputClosed: Bool {
        var descriptor = pollfd(fd: 1, events: Int16(POLLOUT), revents: 0)
        return poll(&descriptor, 1, 0) == 1 && descriptor.revents & Int16(POLLERR | POLLHUP) != 0
    }

    /// Stops the app (if still running) and basd, and the server.
    func stop() async {
        let (server, basd, children) = parts.withLock { ($0.server, $0.basd, $0.children) }
        for child in children { await child.stop() }
        await basd?.stop()
        try? await server?.shutdown()
    }

    func removeFolder() { try? FileManager.default.removeItem(atPath: folder) }

    /// Claims the ending for the steps; false when an interruption already has it (then it stops
    /// everything, removes the folder and exits 21: the caller waits for that).
    func claimEndingForTheSteps() -> Bool {
        parts.withLock { parts in
            guard parts.ending == nil else { return false }
            parts.ending = .steps
            return true
        }
    }

    /// Makes SIGINT, SIGTERM and SIGHUP interrupt the demo, and a closed stdout too (SIGPIPE
    /// ignored, so a write fails with EPIPE rather than killing `ba` before it cleans up). Call
    /// before the folder exists: from here on a signal waits in a pipe until
    /// ``handleInterruptions(from:)`` reads it. Returns the pipe.
    static func catchInterruptions() throws -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        let signals = [SIGINT, SIGTERM, SIGHUP]
        let pipe = ba_sys_signal_pipe(signals, Int32(signals.count))
        guard pipe >= 0 else {
            throw DemoFailure(message: "cannot handle SIGINT, SIGTERM and SIGHUP: \(String(cString: strerror(errno)))")
        }
        return pipe
    }

    /// Interrupts the demo at the first signal read from `pipe` (see ``catchInterruptions()``).
    func handleInterruptions(from pipe: Int32) {
        Thread { [self] in
            var byte: UInt8 = 0
            while read(pipe, &byte, 1) < 0 && errno == EINTR {}
            interrupt(.signal(Int32(byte)))
        }.start()
    }

    /// Unless the steps already claimed the ending (they are stopping everything themselves): stops
    /// the app and basd, removes the folder and exits 21. Nothing starts or writes in the folder
    /// after the claim (``spawn(_:_:environment:output:isBasd:)``, ``inFolder(_:)``).
    func interrupt(_ reason: Interruption) {
        let claimed = parts.withLock { parts -> (children: [DemoChild], basd: DemoChild?)? in
            guard parts.ending == nil else { return nil }
            parts.ending = .interruption
            return (parts.children, parts.basd)
        }
        guard let claimed else { return }
        if case .signal(let number) = reason {
            let name = [SIGINT: "SIGINT", SIGTERM: "SIGTERM", SIGHUP: "SIGHUP"][number] ?? "signal \(number)"
            Self.sayError("interrupted (\(name)); stopping basd and removing \(folder)")
        }
        for child in claimed.children.reversed() { child.stopBlocking() }
        claimed.basd?.stopBlocking()
        removeFolder()
        exit(BAExitCode.interrupted.rawValue)
    }
}
