import ArgumentParser
import BADaemonProtocol
import Foundation

/// `ba packs`: the device's side of asset packs, as basd holds them.
struct Packs: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, download, remove and verify the asset packs basd keeps for apps.",
        discussion: """
            An app whose Info.plist has BAHasManagedAssetPacks and BAManifestURL gets the packs of its \
            download manifest (`ba pack publish`): essential ones before `ba install` returns, prefetch ones in \
            the background, on-demand ones when asked. The current version of pack ID is readable at \
            CONTAINER/AssetPacks/ID. Status words are Apple's: downloadAvailable, downloading, downloaded, \
            upToDate, outOfDate, obsolete (and failed). See docs/packs.md.

            Examples:
              ba packs
              ba packs --app com.example.game --json
              ba packs ensure com.example.game extras
              ba packs remove com.example.game extras
              ba packs verify com.example.game --repair
              ba packs check com.example.game
              ba packs override com.example.game http://127.0.0.1:8080/manifest.json
            """,
        subcommands: [
            PacksList.self, PacksEnsure.self, PacksRemove.self, PacksVerify.self, PacksCheck.self, PacksOverride.self,
        ],
        defaultSubcommand: PacksList.self)
}

/// `ba packs list` (the default): every pack of every app, or of one.
struct PacksList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List asset packs: local and server version, status, progress.",
        discussion: """
            Examples:
              ba packs list --app com.example.game --json
              ba packs
            """)

    @OptionGroup var daemon: DaemonOptions

    @Option(help: "Only this app's packs.")
    var app: String?

    @Flag(help: "Print the answer as one JSON object.")
    var json = false

    func run() throws {
        let session = try daemon.connect()
        let report = try PackCalls.call(session, PackCommand(action: .list, app: app))
        if json {
            print(jsonLine(report))
            return
        }
        for problem in report.problems { printError("manifest check failed: \(problem)") }
        for (name, url) in (report.overrides ?? [:]).sorted(by: { $0.key < $1.key }) {
            print("\(name): download manifest overridden with \(url) (`ba packs override \(name) --clear` ends it)")
        }
        guard !report.packs.isEmpty else {
            print(app.map { "\($0) has no asset packs" } ?? "no app has asset packs")
            return
        }
        print(PackCalls.table(report.packs))
    }
}

/// `ba packs ensure APP PACK`: download a pack (an on-demand one, or one that failed) and wait.
struct PacksEnsure: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ensure", abstract: "Make a pack local (download it now) and wait until it is.",
        discussion: """
            Like Apple's AssetPackManager.ensureLocalAvailability(of:): a pack that is local already is left \
            as it is unless --latest asks for the server's newest version. Exit 0 once it is local, 20 if its \
            download failed.

            Examples:
              ba packs ensure com.example.game extras
              ba packs ensure com.example.game levels --latest --no-wait
            """)

    @OptionGroup var daemon: DaemonOptions

    @Argument(help: "The app's bundle identifier.")
    var app: String

    @Argument(help: "The pack's assetPackID.")
    var pack: String

    @Flag(help: "Also update a local pack the server has a newer version of.")
    var latest = false

    @Flag(help: "Return once the download has started.")
    var noWait = false

    @Flag(
        help:
            "JSON lines: one per change while it downloads (its bytes, what it waits for), then the final state.")
    var json = false

    func run() throws {
        let session = try daemon.connect()
        let report = try PackCalls.call(
            session, PackCommand(action: .ensure, app: app, pack: pack, requireLatest: latest))
        guard !noWait else {
            print(json ? jsonLine(report) : PackCalls.table(report.packs))
            return
        }
        let waiter = PackWaiter(session: session, app: app, json: json, terminal: isatty(STDERR_FILENO) == 1)
        let outcome = try waiter.wait { $0.assetPackID == pack }
        if json { print(jsonLine(PackReport(packs: outcome.packs))) }
        for failure in outcome.failures { printError(failure) }
        if !outcome.failures.isEmpty { throw ExitCode(BAExitCode.downloadFailed.rawValue) }
        if !json { print(PackCalls.table(outcome.packs)) }
    }
}

/// `ba packs remove APP PACK`.
struct PacksRemove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove a pack's files (it stays listed, to download again).",
        discussion: """
            The link CONTAINER/AssetPacks/ID goes at once; the files go once no process holds one of them.

            Examples:
              ba packs remove com.example.game extras
            """)

    @OptionGroup var daemon: DaemonOptions

    @Argument(help: "The app's bundle identifier.")
    var app: String

    @Argument(help: "The pack's assetPackID.")
    var pack: String

    func run() throws {
        let session = try daemon.connect()
        let report = try PackCalls.call(session, PackCommand(action: .remove, app: app, pack: pack))
        print("removed \(pack) of \(app)")
        if !report.packs.isEmpty { print(PackCalls.table(report.packs)) }
    }
}

/// `ba packs verify APP [--repair]`.
struct PacksVerify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Check every local pack file of an app against its index.",
        discussion: """
            Reads each file of each local pack and compares its size and SHA-256 with the pack's index. With \
            --repair, a damaged pack's version is assembled again (what still matches is reused, the rest \
            fetched) and switched in whole; the damaged one stays readable until then. Exit 43 when something \
            does not match (and --repair was not given).

            Examples:
              ba packs verify com.example.game
              ba packs verify com.example.game --repair
            """)

    @OptionGroup var daemon: DaemonOptions

    @Argument(help: "The app's bundle identifier.")
    var app: String

    @Flag(help: "Download again what does not match.")
    var repair = false

    @Flag(help: "Print the report as JSON.")
    var json = false

    func run() throws {
        let session = try daemon.connect()
        let report = try PackCalls.call(session, PackCommand(action: .verify, app: app, repair: repair))
        if json {
            print(jsonLine(report))
        } else {
            for problem in report.problems { print(problem) }
            let local = report.packs.filter { $0.localVersion != nil }.count
            print(
                report.problems.isEmpty
                    ? "\(local) local pack(s) of \(app) verified: every file matches its index"
                    : "\(report.problems.count) problem(s)\(repair ? "; damaged packs are being downloaded again" : "; `ba packs verify \(app) --repair` fetches them again")"
            )
        }
        if !report.problems.isEmpty && !repair { throw ExitCode(BAExitCode.packInvalid.rawValue) }
    }
}

/// `ba packs check APP`.
struct PacksCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check", abstract: "Read an app's download manifest now and update what changed.",
        discussion: """
            What a periodic run does: local packs the server has a new version of are updated in the \
            background, packs no longer listed become obsolete and are removed once nothing holds them.

            Examples:
              ba packs check com.example.game
            """)

    @OptionGroup var daemon: DaemonOptions

    @Argument(help: "The app's bundle identifier.")
    var app: String

    @Flag(help: "Print the answer as JSON.")
    var json = false

    func run() throws {
        let session = try daemon.connect()
        let report = try PackCalls.call(session, PackCommand(action: .check, app: app))
        print(json ? jsonLine(report) : PackCalls.table(report.packs))
    }
}

/// What `ba packs` and `ba install` share.
enum PackCalls {
    static func call(_ session: DaemonSession, _ command: PackCommand) throws -> PackReport {
        let request = Request.packs(command)
        let result = try session.call(request)
        guard case .packs(let report) = result else { throw session.unexpected(result, to: request) }
        return report
    }

    static func table(_ packs: [PackInfo]) -> String {
        var table = TextTable(["app", "pack", "policy", "language", "local", "server", "status", "progress", "note"])
        for pack in packs {
            var progress = ""
            if let present = pack.bytesPresent, let total = pack.bytesTotal {
                progress = "\(HumanReadable.bytes(present)) of \(HumanReadable.bytes(total))"
                if let reused = pack.bytesReused, reused > 0 { progress += " (\(HumanReadable.bytes(reused)) reused)" }
                // Held (a metered network, Low Power Mode…): what it will still fetch when it goes.
                if pack.waitingFor != nil, let fetch = pack.fetchBytes, fetch > 0 {
                    progress += ", \(HumanReadable.bytes(fetch)) to fetch"
                }
            } else if let fetch = pack.fetchBytes, fetch > 0 || pack.writeBytes ?? 0 > 0 {
                // What it will fetch and write if ensured now (an update: its delta, once planned).
                progress = HumanReadable.bytes(fetch) + " to fetch"
                if let write = pack.writeBytes { progress += ", \(HumanReadable.bytes(write)) to write" }
            } else if let size = pack.downloadSize, pack.localVersion == nil {
                progress = HumanReadable.bytes(size) + " to download"
            }
            var note =
                pack.waitingFor.map {
                    WaitingText.text($0.rawValue, error: pack.waitingError, nextAttemptAt: pack.nextAttemptAt)
                } ?? ""
            if pack.declined == true { note = "declined by the extension (`ba packs ensure` downloads it)" }
            if let error = pack.error { note = error + (pack.errorCode.map { " (error \($0))" } ?? "") }
            let policy: String = pack.policy?.rawValue ?? "-"
            let local: String = pack.localVersion.map(String.init) ?? "-"
            let server: String = pack.serverVersion.map(String.init) ?? "-"
            table.rows.append([
                pack.appIdentifier, pack.assetPackID, policy, pack.language ?? "-", local, server,
                pack.status.description, progress, note,
            ])
        }
        return table.render()
    }
}

/// Follows packs of one app until none of those watched is downloading: a progress bar on a
/// terminal (with what it waits for), or with `json` a JSON line (`{"packs":[…]}`, as the
/// listing) each time the packs downloading change. basd's listing is read every 100 ms (one
/// small request), which also sees a pack that finished before the wait began.
struct PackWaiter {
    var session: DaemonSession
    var app: String
    var json: Bool
    var terminal: Bool

    struct Outcome {
        var packs: [PackInfo]
        var failures: [String]
    }

    /// Waits while a pack `watched` picks (in the first listing) is downloading; then reports
    /// the watched packs and the failures among them (not local, or with an error).
    func wait(_ watched: (PackInfo) -> Bool) throws -> Outcome {
        var lastDraw = ContinuousClock.now - .seconds(1)
        var drew = false
        var lastLine = ""
        var ids: Set<String>?
        while true {
            let report = try PackCalls.call(session, PackCommand(action: .list, app: app))
            if ids == nil { ids = Set(report.packs.filter(watched).map(\.assetPackID)) }
            let packs = report.packs.filter { ids?.contains($0.assetPackID) == true }
            let downloading = packs.filter(\.isDownloading)
            if downloading.isEmpty {
                if drew { FileHandle.standardError.write(Data("\n".utf8)) }
                let failures = packs.compactMap { pack in
                    pack.localVersion == nil || pack.error != nil
                        ? "asset pack \"\(pack.assetPackID)\" of \(app) is not local: \(pack.error ?? "its download did not finish")"
                        : nil
                }
                return Outcome(packs: packs, failures: failures)
            }
            if json {
                // One line per change (the next try's time left out: it alone is no change).
                var shown = downloading
                for index in shown.indices { shown[index].nextAttemptAt = nil }
                let compared = jsonLine(PackReport(packs: shown))
                if compared != lastLine {
                    lastLine = compared
                    print(jsonLine(PackReport(packs: downloading)))
                }
            } else if terminal && ContinuousClock.now - lastDraw >= .milliseconds(200) {
                lastDraw = ContinuousClock.now
                let present = downloading.reduce(Int64(0)) { $0 + ($1.bytesPresent ?? 0) }
                let total = downloading.reduce(Int64(0)) { $0 + ($1.bytesTotal ?? 0) }
                let fraction = total > 0 ? Double(present) / Double(total) : 0
                var line = String(
                    format: "\r\u{1B}[Kpacks [%@] %3.0f%%  %@ / %@  %d downloading", HumanReadable.bar(fraction),
                    fraction * 100, HumanReadable.bytes(present), HumanReadable.bytes(total), downloading.count)
                if let waiting = downloading.first(where: { $0.waitingFor != nil }), let reason = waiting.waitingFor {
                    line +=
                        "; "
                        + WaitingText.text(
                            reason.rawValue, error: waiting.waitingError, nextAttemptAt: waiting.nextAttemptAt)
                }
                FileHandle.standardError.write(Data(line.utf8))
                drew = true
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }
}
