import BAAssetServer
import BACommands
import BADaemonProtocol
import BAPacks
import BASampleAssets
import Foundation
import Synchronization

/// The demo's asset packs: the sample app's `base` (essential), `levels` (prefetch) and `extras`
/// (on demand), built and published with `ba pack` into the folder the asset server serves, then
/// an on-demand request and a new version of `levels` fetched as a delta.
extension DemoStage {
    static let packIDs = ["base", "levels", "extras"]

    /// The packs' files, written from `content.json` (`ba pack build --root`).
    var packSource: String { folder + "/packs-source" }
    /// The publish folder: the asset server's root.
    var publishFolder: String { folder + "/public" }
    var packKey: String { folder + "/pack-signing.key" }
    /// The extension's manifest, merged into the download manifest (`ba pack publish --merge`).
    var extensionManifest: String { folder + "/extension-manifest.json" }
    /// The packs' manifests (Apple's format) and `content.json`.
    var packManifests: String { products.examples + "/SampleApp/packs" }

    /// What step 2 published.
    struct PublishedPacks {
        var content: SamplePackContent
        /// For the app's `BAAssetPackPublicKey`.
        var publicKey: String
    }

    /// What a delta update fetched and reused, from basd's `finished` pack event.
    struct Delta {
        var pack: String
        var from: Int
        var to: Int
        var fetched: Int64
        var reused: Int64
        var total: Int64

        /// `levels 1 → 2: fetched 1.1 MiB of 48.3 MiB (97 % reused)`; the percentage is rounded
        /// down, so a delta that fetched anything never says 100 %.
        var line: String {
            let percent = total > 0 ? Int((Double(reused) / Double(total) * 100).rounded(.down)) : 0
            return "\(pack) \(from) → \(to): fetched \(HumanReadable.bytes(fetched)) of \(HumanReadable.bytes(total)) "
                + "(\(percent) % reused)"
        }
    }

    // MARK: - Steps

    /// Step 2: version 1 of every pack, signed, with the extension's manifest merged in (the app
    /// has one `BAManifestURL` for both).
    func publishPacks(server: AssetServer, assets: DemoAssets) async throws -> PublishedPacks {
        step(2, "Publishing the sample app's asset packs with `ba pack` (served from \(publishFolder))")
        let content: SamplePackContent
        do {
            content = try SamplePackContent.read(from: packManifests + "/content.json")
            try inFolder {
                try content.writeFiles(into: packSource)
                try Data(assets.manifest).write(to: URL(fileURLWithPath: extensionManifest))
            }
        } catch let failure as DemoFailure {
            throw failure
        } catch {
            throw DemoFailure(message: "cannot write the packs' files: \(error)")
        }
        note("their files are generated from Examples/SampleApp/packs/content.json into \(packSource);")
        note("paths below are relative to the demo's folder")
        try await runBa(["pack", "keygen", "-o", packKey])
        guard let publicKey = try? String(contentsOfFile: packKey + ".pub", encoding: .utf8) else {
            throw DemoFailure(message: "`ba pack keygen` wrote no \(packKey).pub")
        }
        for id in Self.packIDs {
            try await runBa([
                "pack", "build", packManifests + "/\(id).json", "--root", packSource, "--version", "1", "-o",
                publishFolder,
            ])
        }
        try await runBa(publishArguments(server))
        return PublishedPacks(content: content, publicKey: publicKey.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Step 7: the on-demand pack, as `ba packs ensure` and `AssetPackManager.ensureLocalAvailability(of:)` ask for it.
    func ensureOnDemand(_ events: PackEventLog) async throws {
        step(7, "The player opens the extras: the on-demand pack `extras`, downloaded now")
        if let extras = try packs().first(where: { $0.assetPackID == "extras" }) {
            note(
                "extras until now: \(extras.status)"
                    + (extras.downloadSize.map { ", \(HumanReadable.bytes($0)) to download" } ?? ""))
        }
        note("the sample app asks with AssetPackManager (SampleApp --open-extras): ensureLocalAvailability(of:)")
        let mark = events.count
        let app = try await spawn(
            products.sampleApp, [appDirectory, "--open-extras"], environment: ["BA_SOCKET": socketPath])
        let finished = try await follow("extras", version: nil, events: events, from: mark)
        guard let status = await app.wait(seconds: 60) else {
            await app.stop()
            throw DemoFailure(message: "the sample app did not open the extras within 60 s")
        }
        guard status == 0 else { throw DemoFailure(message: "the sample app exited \(status); basd's log: \(basdLog)") }
        note(
            "extras \(finished.version.map(String.init) ?? "?") is local: fetched "
                + "\(HumanReadable.bytes(finished.bytesFetched ?? 0)) for \(HumanReadable.bytes(finished.bytesTotal ?? 0))"
                + " of files, at CONTAINER/AssetPacks/extras")
    }

    /// Step 8: `levels` version 1 local (prefetched since the install), version 2 published, and
    /// the update a periodic run makes, fetched as a delta.
    func updateLevels(
        server: AssetServer, published: PublishedPacks, events: PackEventLog
    ) async throws -> Delta {
        let local = try await waitForLocal("levels", version: 1, seconds: 180)
        guard let update = published.content.updates.first(where: { $0.pack == "levels" }) else {
            throw DemoFailure(message: "Examples/SampleApp/packs/content.json has no update of levels")
        }
        step(8, "levels version \(update.version), published mid-demo: a delta update")
        note(
            "levels \(local.localVersion ?? 1) is local (the prefetch since the install); version \(update.version) changes:"
        )
        for edit in update.edits {
            let size = HumanReadable.bytes(Int64(edit.generate.size))
            switch (edit.offset, edit.replace ?? 0) {
            case (nil, _): note("  \(edit.path): a new file of \(size)")
            case (let offset?, 0): note("  \(edit.path): \(size) inserted at \(HumanReadable.bytes(Int64(offset)))")
            case (let offset?, _): note("  \(edit.path): \(size) rewritten at \(HumanReadable.bytes(Int64(offset)))")
            }
        }
        do {
            try inFolder { try published.content.apply(update, in: packSource) }
        } catch let failure as DemoFailure {
            throw failure
        } catch {
            throw DemoFailure(message: "cannot edit the packs' files: \(error)")
        }
        try await runBa([
            "pack", "build", packManifests + "/levels.json", "--root", packSource, "--version", String(update.version),
            "-o", publishFolder,
        ])
        try await runBa(publishArguments(server))
        note(
            "what a periodic run (and `ba packs check`) does: basd reads the manifest again, a packs request, action check"
        )
        let mark = events.count
        _ = try packCall(PackCommand(action: .check, app: Self.bundleIdentifier))
        let finished = try await follow("levels", version: update.version, events: events, from: mark)
        let delta = Delta(
            pack: "levels", from: local.localVersion ?? 1, to: update.version, fetched: finished.bytesFetched ?? 0,
            reused: finished.bytesReused ?? 0, total: finished.bytesTotal ?? 0)
        note(delta.line)
        return delta
    }

    /// Step 9's packs: `ba packs verify`'s request reads every local file against its index; the
    /// table lists each file with the SHA-256 of the published index. Returns the problems.
    func verifyPacks() throws -> (files: Int, problems: [String]) {
        let report = try packCall(PackCommand(action: .verify, app: Self.bundleIdentifier))
        var problems = report.problems
        var table = TextTable(["PACK FILE", "VERSION", "SIZE", "SHA-256 (INDEX)", "CHECK"])
        var files = 0
        for id in Self.packIDs {
            guard let pack = report.packs.first(where: { $0.assetPackID == id }), let version = pack.localVersion else {
                table.append(["AssetPacks/\(id)/", "-", "-", "-", "MISSING"])
                problems.append("asset pack \(id) is not local")
                continue
            }
            let index: PackIndex
            do {
                index = try PackIndex.read(publishFolder + "/" + PackIndex.indexPath(id: id, version: version))
            } catch {
                throw DemoFailure(message: "cannot read the published index of \(id) \(version): \(error)")
            }
            for file in index.files.sorted(by: { $0.path < $1.path }) {
                files += 1
                let wrong = report.problems.contains { $0.hasPrefix("\(id) \(version): \(file.path):") }
                table.append([
                    "AssetPacks/\(id)/\(file.path)", String(version), HumanReadable.bytes(file.size),
                    String(file.sha256.prefix(16)) + "…", wrong ? "WRONG" : "ok",
                ])
            }
        }
        say(table.render().split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        return (files, problems)
    }

    // MARK: - Parts

    private func publishArguments(_ server: AssetServer) -> [String] {
        [
            "pack", "publish", publishFolder, "--base-url", server.baseURL, "--key", packKey, "--app",
            Self.bundleIdentifier, "--merge", extensionManifest,
        ]
    }

    /// Runs this `ba` with `arguments`, shows the command and what it printed, and fails the
    /// step if it exits other than 0.
    func runBa(_ arguments: [String]) async throws {
        let shown = arguments.map(shorten).joined(separator: " ")
        note("$ ba \(shown)")
        let logPath = folder + "/ba-pack.log"
        let log = try inFolder {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
            return try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        }
        let child: DemoChild
        do {
            defer { try? log.close() }
            child = try await spawn(products.ba, arguments, output: log.fileDescriptor)
        }
        let status = await child.wait(seconds: 300)
        let output = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        for line in output.split(separator: "\n") { note("  " + shorten(String(line))) }
        guard let status else {
            await child.stop()
            throw DemoFailure(message: "`ba \(shown)` did not finish within 300 s")
        }
        guard status == 0 else { throw DemoFailure(message: "`ba \(shown)` exited \(status)") }
    }

    /// A path in the demo's folder or the examples, shortened for the screen.
    private func shorten(_ text: String) -> String {
        text.replacingOccurrences(of: folder + "/", with: "").replacingOccurrences(
            of: products.examples + "/", with: "Examples/")
    }

    func packCall(_ command: PackCommand) throws -> PackReport {
        do {
            let session = try connect()
            defer { session.client.close() }
            let result = try session.client.call(.packs(command))
            guard case .packs(let report) = result else {
                throw DemoFailure(
                    message: "basd answered the packs request (\(command.action.rawValue)) with \(result)")
            }
            return report
        } catch let failure as DemoFailure {
            throw failure
        } catch {
            throw DemoFailure(
                message: "basd's packs request (\(command.action.rawValue)) failed: \(error); basd's log: \(basdLog)")
        }
    }

    func packs() throws -> [PackInfo] {
        try packCall(PackCommand(action: .list, app: Self.bundleIdentifier)).packs
    }

    func printPacks(_ packs: [PackInfo]) {
        var table = TextTable(["PACK", "POLICY", "LOCAL", "SERVER", "STATUS", "PROGRESS"])
        for pack in packs {
            var progress = "-"
            if let present = pack.bytesPresent, let total = pack.bytesTotal {
                progress = HumanReadable.bytes(present) + " / " + HumanReadable.bytes(total)
            } else if let size = pack.downloadSize, pack.localVersion == nil {
                progress = HumanReadable.bytes(size) + " to download"
            }
            table.append([
                pack.assetPackID, pack.policy?.rawValue ?? "-", pack.localVersion.map(String.init) ?? "-",
                pack.serverVersion.map(String.init) ?? "-", pack.status.description, progress,
            ])
        }
        say(table.render().split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
    }

    /// A connection that receives basd's pack events into `events` (closed by the caller).
    func subscribeToPackEvents(_ events: PackEventLog) throws -> DaemonClient {
        do {
            let client = try DaemonClient(
                socketPath: socketPath, client: ClientInfo(role: .cli, pid: getpid()),
                onPackEvent: { events.append($0) })
            guard case .ok = try client.call(.subscribeEvents) else {
                client.close()
                throw DemoFailure(message: "basd answered subscribeEvents with something else")
            }
            return client
        } catch let failure as DemoFailure {
            throw failure
        } catch {
            throw DemoFailure(message: "cannot follow basd's pack events: \(error); basd's log: \(basdLog)")
        }
    }

    /// Shows `pack`'s events from the `from`th on (began, progress by quarters) until it is
    /// finished (of `version`, if given); fails on a `failed` event or after `seconds`.
    private func follow(
        _ pack: String, version: Int?, events: PackEventLog, from: Int, seconds: Double = 120
    ) async throws -> PackEvent {
        let deadline = Date(timeIntervalSinceNow: seconds)
        var seen = from
        var quarter = 0
        while Date() < deadline {
            let new = events.since(seen)
            seen += new.count
            for event in new where event.assetPackID == pack && (version == nil || event.version == version) {
                switch event.kind {
                case .began:
                    note("  event: began, version \(event.version.map(String.init) ?? "?")")
                case .progress:
                    guard let present = event.bytesPresent, let total = event.bytesTotal, total > 0 else { break }
                    let reached = Int(present * 4 / total)
                    if reached > quarter && reached < 4 {
                        quarter = reached
                        note("  event: progress, \(HumanReadable.bytes(present)) of \(HumanReadable.bytes(total))")
                    }
                case .finished:
                    note(
                        "  event: finished, version \(event.version.map(String.init) ?? "?") "
                            + "(fetched \(HumanReadable.bytes(event.bytesFetched ?? 0)), "
                            + "reused \(HumanReadable.bytes(event.bytesReused ?? 0)))")
                    return event
                case .failed(let failure):
                    throw DemoFailure(message: "asset pack \(pack) failed: \(failure.message); basd's log: \(basdLog)")
                case .paused, .removed, .obsolete:
                    break
                }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw DemoFailure(message: "asset pack \(pack) did not finish within \(Int(seconds)) s; basd's log: \(basdLog)")
    }

    /// Waits (polling basd's listing, at most `seconds`) until `pack`'s `version` is local.
    private func waitForLocal(_ pack: String, version: Int, seconds: Double) async throws -> PackInfo {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while true {
            let info = try packs().first { $0.assetPackID == pack }
            if let info, let local = info.localVersion, local >= version { return info }
            if let info, let error = info.error, !info.isDownloading {
                throw DemoFailure(message: "asset pack \(pack) failed: \(error); basd's log: \(basdLog)")
            }
            guard Date() < deadline else {
                throw DemoFailure(
                    message: "asset pack \(pack) version \(version) was not local within \(Int(seconds)) s "
                        + "(\(info.map { $0.status.description } ?? "not listed")); basd's log: \(basdLog)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

/// basd's pack events as they arrive (on the client's reader thread), for the steps to read.
final class PackEventLog: Sendable {
    private let events = Mutex<[PackEvent]>([])

    func append(_ event: PackEvent) { events.withLock { $0.append(event) } }

    var count: Int { events.withLock { $0.count } }

    /// The events from the `index`th on.
    func since(_ index: Int) -> [PackEvent] {
        events.withLock { Array($0.dropFirst(index)) }
    }
}
