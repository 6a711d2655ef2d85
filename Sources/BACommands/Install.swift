import ArgumentParser
import BADaemonProtocol
import Foundation

/// `ba install APP_DIR`: what a package's post-install hook calls.
struct Install: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Install (or update) an app: register it, run its extension, and wait for its essential downloads.",
        discussion: """
            basd reads APP_DIR/Info.plist, registers the app, fetches its manifest (BAManifestURL) into a \
            read-only file, calls the extension's downloads(for: .install) (.update when a different version \
            is registered), schedules what it returns, and deletes the manifest. ba then shows one progress bar \
            for the essential downloads (total = the sum of their fileSize) and returns when all are done \
            (exit 0) or one failed or was refused (exit 20, naming it; the app stays installed). When basd \
            would not call the extension (quarantined, background activity or in-app content off), ba says \
            why and exits 34; the app stays registered. Non-essential downloads continue in basd. Ctrl-C \
            stops waiting, not the downloads.

            Examples:
              ba install /opt/example-game
              ba install /opt/example-game --json
              ba install /opt/example-game --no-wait
            """)

    @OptionGroup var daemon: DaemonOptions

    @Argument(help: ArgumentHelp("The app directory (holding Info.plist).", valueName: "app-dir"))
    var appDirectory: String

    @Flag(help: "Print the report and progress events as JSON lines instead of text and a bar.")
    var json = false

    @Flag(help: "Return once the extension has run and the downloads are scheduled; do not wait for essentials.")
    var noWait = false

    @OptionGroup var deadline: InstallDeadline

    func run() throws {
        try InstallFlow(
            daemon: daemon, appDirectory: appDirectory, mode: .automatic, json: json, noWait: noWait,
            timeout: deadline.timeout, strict: deadline.strict
        ).run()
    }
}

/// `ba update APP_DIR`: the same flow with `.update`.
struct Update: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Update a registered app: run its extension with .update and wait for its essential downloads.",
        discussion: """
            Like `ba install`, but the app must be registered, and the extension's downloads(for: .update) \
            runs even when the version did not change.

            Examples:
              ba update /opt/example-game
            """)

    @OptionGroup var daemon: DaemonOptions

    @Argument(help: ArgumentHelp("The app directory (holding Info.plist).", valueName: "app-dir"))
    var appDirectory: String

    @Flag(help: "Print the report and progress events as JSON lines instead of text and a bar.")
    var json = false

    @Flag(help: "Return once the extension has run and the downloads are scheduled; do not wait for essentials.")
    var noWait = false

    @OptionGroup var deadline: InstallDeadline

    func run() throws {
        try InstallFlow(
            daemon: daemon, appDirectory: appDirectory, mode: .update, json: json, noWait: noWait,
            timeout: deadline.timeout, strict: deadline.strict
        ).run()
    }
}

/// The client side of an install or update: ask basd, print its report, follow the essentials.
struct InstallFlow {
    var daemon: DaemonOptions
    var appDirectory: String
    var mode: InstallRequest.Mode
    var json: Bool
    var noWait: Bool
    /// Seconds after which ba stops waiting (exit 22); nil waits as long as it takes.
    var timeout: Double? = nil
    /// Whether a refused non-essential download fails the install too (exit 20).
    var strict = false

    func run() throws {
        if let timeout { InstallDeadline.arm(seconds: timeout, appDirectory: appDirectory) }
        let directory = URL(fileURLWithPath: appDirectory, isDirectory: true).standardizedFileURL.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            printError("\(directory) is not a directory: pass the app's directory (the one holding Info.plist)")
            throw ExitCode(BAExitCode.noInput.rawValue)
        }
        let watcher = EssentialWatcher(json: json, terminal: isatty(STDERR_FILENO) == 1)
        let session: DaemonSession
        do {
            session = try daemon.tryConnect(onEvent: { watcher.received($0) }, onClose: { watcher.lost($0) })
        } catch {
            if getuid() == 0 && ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] == nil {
                // A package's maintainer script: root, no user session, no basd of its own.
                printError(
                    "\(error.message)\nba: run as root without a user session (a package's post-install script?): "
                        + "basd is per user, so install the app's registration instead: put its directory, or a "
                        + "symlink to it, at /usr/share/background-assets/apps/NAME; every user's basd installs it "
                        + "(and uninstalls it when it goes). See docs/operations.md.")
                throw ExitCode(BAExitCode.daemonUnavailable.rawValue)
            }
            throw DaemonSession.unavailable(error)
        }
        // Subscribed before the install, so no event of its downloads can be missed.
        let subscribed = try session.call(.subscribeEvents)
        guard case .ok = subscribed else { throw session.unexpected(subscribed, to: .subscribeEvents) }
        let request = Request.installApp(InstallRequest(appDirectory: directory, mode: mode))
        let result = try session.call(request)
        guard case .extensionRun(let report) = result else { throw session.unexpected(result, to: request) }
        InstallReportPrinter(json: json).print(report)

        if report.manifestError != nil {
            // The app is registered; its extension could not be called without its manifest.
            throw ExitCode(BAExitCode.downloadFailed.rawValue)
        }
        if report.callRefused == true {
            // Registered, but nothing was fetched for it: the installer must hear about it.
            printError(
                "the extension of \(report.bundleIdentifier) was not called: "
                    + "\(report.skipped ?? "basd refused the call"); \(report.bundleIdentifier) stays registered "
                    + "(run `ba update \(appDirectory)` once it may run)")
            throw ExitCode(BAExitCode.extensionNotCalled.rawValue)
        }
        if let verdict = report.verdict, verdict != "ok" {
            throw ExitCode(BAExitCode.code(forVerdictNamed: verdict).rawValue)
        }
        let essentials = report.scheduled.filter { $0.download.isEssential }
        var failed = false
        if !noWait, !essentials.isEmpty {
            switch watcher.wait(for: essentials) {
            case .finished:
                break
            case .failed(let identifier, let message, let code):
                printError(
                    "essential download \"\(identifier)\" failed: \(message)\(code.map { " (error \($0))" } ?? ""); "
                        + "\(report.bundleIdentifier) stays installed")
                failed = true
            case .lost(let error):
                printError(
                    "lost basd while waiting for the essential downloads: \(error.message); they continue in basd "
                        + "(see `ba downloads --app \(report.bundleIdentifier)`)")
                throw ExitCode(BAExitCode.daemonConnectionLost.rawValue)
            }
        }
        // An essential download refused when scheduled never comes: as much a failure as one
        // that failed to download (the report printed them too; this is the verdict on stderr).
        for refused in report.refused where refused.isEssential == true {
            printError(
                "essential download \"\(refused.identifier)\" was refused: \(refused.reason) (error \(refused.code)); "
                    + "\(report.bundleIdentifier) stays installed")
            failed = true
        }
        // A refused non-essential download does not fail the install, but an installer must hear
        // about it: on stderr, and as a failure with --strict.
        for refused in report.refused where refused.isEssential != true {
            printError(
                "download \"\(refused.identifier)\" was refused: \(refused.reason) (error \(refused.code)); "
                    + "\(report.bundleIdentifier) is installed without it\(strict ? "" : " (--strict makes this a failure)")"
            )
            if strict { failed = true }
        }
        if report.hasPacks == true {
            if let problem = report.packProblem {
                printError(
                    "the asset packs of \(report.bundleIdentifier) could not be started: \(problem); \(report.bundleIdentifier) stays installed (`ba packs check \(report.bundleIdentifier)` tries again)"
                )
                failed = true
            } else if !noWait {
                // Essential packs of this event (started by the install), and those that failed already.
                let waiter = PackWaiter(
                    session: session, app: report.bundleIdentifier, json: json, terminal: isatty(STDERR_FILENO) == 1)
                let outcome = try waiter.wait { pack in
                    if let essential = report.essentialPacks { return essential.contains(pack.assetPackID) }
                    // An older basd does not say which: those downloading as essential, and failed ones.
                    return pack.essential == true
                        || (pack.policy == .essential && pack.localVersion == nil && pack.error != nil)
                }
                if json { Swift.print(jsonLine(PackLine(packs: outcome.packs))) }
                for failure in outcome.failures { printError(failure) }
                if !outcome.failures.isEmpty {
                    printError("\(report.bundleIdentifier) stays installed; `ba packs ensure` downloads a pack again")
                    failed = true
                } else if !json && !outcome.packs.isEmpty {
                    Swift.print("  essential packs local: \(outcome.packs.map(\.assetPackID).joined(separator: ", "))")
                }
            }
        }
        if failed { throw ExitCode(BAExitCode.downloadFailed.rawValue) }
    }

    /// The JSON line of the essential packs an install waited for.
    struct PackLine: Encodable {
        var packs: [PackInfo]
    }
}

/// Prints an ``ExtensionRunReport`` (install, update or simulate).
struct InstallReportPrinter {
    var json: Bool

    func print(_ report: ExtensionRunReport) {
        if json {
            Swift.print(jsonLine(ReportLine(report: report)))
            return
        }
        var what = "\(report.bundleIdentifier) \(report.version)"
        if let previous = report.previousVersion, previous != report.version { what += " (was \(previous))" }
        Swift.print(what)
        if let skipped = report.skipped { Swift.print("  extension not called: \(skipped)") }
        if let event = report.event {
            var line = "  extension \(event): \(report.verdict ?? "?")"
            if let detail = report.detail { line += " (\(detail))" }
            if let milliseconds = report.durationMilliseconds { line += " in \(milliseconds) ms" }
            if let bytes = report.manifestBytes { line += ", manifest \(HumanReadable.bytes(bytes))" }
            Swift.print(line)
        }
        let essential = report.scheduled.filter(\.download.isEssential)
        let other = report.scheduled.count - essential.count
        if report.event != nil, report.verdict == "ok" {
            Swift.print("  scheduled \(essential.count) essential and \(other) other download(s)")
        }
        for download in report.scheduled {
            let size = download.download.expectedSize.map(HumanReadable.bytes) ?? "size unknown"
            Swift.print(
                "    \(download.download.isEssential ? "essential" : "         ") \(download.download.identifier) (\(size))"
            )
        }
        for refused in report.refused {
            Swift.print("  refused \(refused.identifier): \(refused.reason) (error \(refused.code))")
        }
        for identifier in report.cancelled ?? [] { Swift.print("  cancelled \(identifier) (by the extension)") }
        for line in report.logs { Swift.print("  log: \(line)") }
    }

    /// The JSON line: the report under `report`, so progress lines can be told apart.
    struct ReportLine: Encodable {
        var report: ExtensionRunReport
    }
}

/// Follows the essential downloads of one install through basd's CLI event stream: one progress
/// bar on a terminal, a line per finished download otherwise, JSON lines with `--json`.
///
/// Events arrive on the ``DaemonClient``'s reader thread; ``wait(for:)`` runs on the main thread.
final class EssentialWatcher: @unchecked Sendable {
    enum Outcome {
        case finished
        case failed(identifier: String, message: String, code: Int?)
        case lost(DaemonClientError)
    }

    private let json: Bool
    private let terminal: Bool
    private let lock = NSLock()
    private let signal = DispatchSemaphore(value: 0)
    // Under `lock`.
    private var buffered: [DownloadEvent] = []
    private var watching: [String: DownloadInfo]?
    private var written: [String: Int64] = [:]
    private var finished: Set<String> = []
    private var outcome: Outcome?
    private var lastDraw = ContinuousClock.now - .seconds(1)
    private var lastQuarter = -1

    init(json: Bool, terminal: Bool) {
        self.json = json
        self.terminal = terminal
    }

    func received(_ event: DownloadEvent) {
        lock.withLock {
            guard watching != nil else {
                // Before the report arrived: keep it (bounded) until the watched set is known.
                if buffered.count < 10_000 { buffered.append(event) }
                return
            }
            handle(event)
        }
    }

    func lost(_ error: DaemonClientError) {
        lock.withLock { finish(.lost(error)) }
    }

    /// Blocks until every one of `essentials` finished, one failed, or basd went away.
    func wait(for essentials: [DownloadInfo]) -> Outcome {
        lock.withLock {
            watching = Dictionary(essentials.map { ($0.uniqueIdentifier, $0) }, uniquingKeysWith: { a, _ in a })
            for event in buffered { handle(event) }
            buffered = []
            draw(force: true)
        }
        signal.wait()
        return lock.withLock {
            if terminal && !json { FileHandle.standardError.write(Data("\n".utf8)) }
            return outcome ?? .finished
        }
    }

    // MARK: Under `lock`

    private var total: Int64 { watching?.values.reduce(0) { $0 + ($1.download.fileSize) } ?? 0 }

    private func handle(_ event: DownloadEvent) {
        guard outcome == nil, let watching, let download = watching[event.downloadUniqueIdentifier] else { return }
        if json { Swift.print(jsonLine(event)) }
        switch event.kind {
        case .progress, .began, .paused:
            if let bytes = event.bytesWritten ?? event.offset ?? event.bytesOnDisk {
                written[event.downloadUniqueIdentifier] = bytes
            }
        case .finished:
            finished.insert(event.downloadUniqueIdentifier)
            written[event.downloadUniqueIdentifier] = event.size ?? download.download.fileSize
            if !json && !terminal {
                Swift.print("finished \(download.download.identifier) (\(HumanReadable.bytes(event.size ?? 0)))")
            }
            if finished.count == watching.count { finish(.finished) }
        case .failed:
            finish(
                .failed(
                    identifier: download.download.identifier,
                    message: event.errorMessage ?? "failed", code: event.errorCode))
        case .needsCredentials, .waiting:
            break
        }
        draw(force: outcome != nil)
    }

    private func finish(_ outcome: Outcome) {
        guard self.outcome == nil else { return }
        self.outcome = outcome
        signal.signal()
    }

    private func draw(force: Bool = false) {
        guard !json, let watching else { return }
        let done = min(written.values.reduce(0, +), total)
        let fraction = total > 0 ? Double(done) / Double(total) : 1
        if !terminal {
            let quarter = Int(fraction * 4)
            if quarter != lastQuarter {
                lastQuarter = quarter
                Swift.print(
                    "essential downloads: \(Int(fraction * 100))% (\(HumanReadable.bytes(done)) of \(HumanReadable.bytes(total)))"
                )
            }
            return
        }
        let now = ContinuousClock.now
        guard force || now - lastDraw >= .milliseconds(100) else { return }
        lastDraw = now
        let bar = HumanReadable.bar(fraction)
        let line = String(
            format: "\r\u{1B}[Kessential [%@] %3.0f%%  %@ / %@  %d of %d", bar, fraction * 100,
            HumanReadable.bytes(done), HumanReadable.bytes(total), finished.count, watching.count)
        FileHandle.standardError.write(Data(line.utf8))
    }
}
