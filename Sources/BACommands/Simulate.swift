import ArgumentParser
import BADaemonProtocol
import Foundation

/// `ba simulate`: Apple's `backgroundassets-debug --simulate`, against basd.
struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Wake an app's extension as if it had been installed, updated, its periodic time had come, "
            + "or the user's language had changed.",
        discussion: """
            basd fetches the app's manifest, calls the extension's downloads(for:) with the event, and \
            schedules what it returns, as for the real event. Like Apple's backgroundassets-debug, a \
            simulation bypasses the daily runtime allowance (its runtime still counts) but not the per-call \
            deadline. Apple's spelling is accepted too.

            `language-change` calls downloads(for: .languageChange) (essential downloads are not \
            allowed), as Apple's system does when the user's preferred languages change.

            Examples:
              ba simulate periodic --app com.example.game
              ba simulate language-change --app com.example.game
              ba simulate install --app com.example.game --json
              ba simulate -s --app-update -b com.example.game
              ba simulate --simulate --app-install --app-bundle-id com.example.game
            """)

    @OptionGroup var daemon: DaemonOptions

    @Argument(help: ArgumentHelp("install, update, periodic or language-change.", valueName: "event"))
    var event: SimulatedEvent?

    @Option(
        name: [.customLong("app"), .customShort("b"), .customLong("app-bundle-id")],
        help: "The app's bundle identifier (-b or --app-bundle-id as in Apple's tool).")
    var app: String

    @Flag(name: [.customShort("s"), .customLong("simulate")], help: "Apple's spelling; implied.")
    var simulateFlag = false

    @Flag(name: .customLong("app-install"), help: "Apple's spelling of `install`.")
    var appInstall = false

    @Flag(name: .customLong("app-update"), help: "Apple's spelling of `update`.")
    var appUpdate = false

    @Flag(name: .customLong("periodic"), help: "Apple's spelling of `periodic`.")
    var periodic = false

    @Flag(help: "Print the report as one JSON line.")
    var json = false

    /// The one event named, either way.
    var chosen: SimulatedEvent? {
        var events: [SimulatedEvent] = event.map { [$0] } ?? []
        if appInstall { events.append(.install) }
        if appUpdate { events.append(.update) }
        if periodic { events.append(.periodic) }
        return events.count == 1 ? events[0] : nil
    }

    func validate() throws {
        guard chosen != nil else {
            throw ValidationError(
                "name exactly one event: install, update, periodic or language-change "
                    + "(or --app-install, --app-update, --periodic)")
        }
    }

    func run() throws {
        guard let chosen else { throw ExitCode(BAExitCode.usage.rawValue) }
        let session = try daemon.connect()
        let request = Request.simulate(app: app, event: chosen)
        let result = try session.call(request)
        guard case .extensionRun(let report) = result else { throw session.unexpected(result, to: request) }
        InstallReportPrinter(json: json).print(report)
        if report.manifestError != nil { throw ExitCode(BAExitCode.downloadFailed.rawValue) }
        if report.event == nil { throw ExitCode(BAExitCode.extensionNotCalled.rawValue) }
        if let verdict = report.verdict, verdict != "ok" {
            throw ExitCode(BAExitCode.code(forVerdictNamed: verdict).rawValue)
        }
    }
}

extension SimulatedEvent: ExpressibleByArgument {}

/// `ba apps`: the registered apps.
struct Apps: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the registered apps: version, launched or not, allowances left, extension runs, quarantine.",
        discussion: """
            Examples:
              ba apps
              ba apps --json
              ba apps --clear-quarantine com.example.game
            """)

    @OptionGroup var daemon: DaemonOptions

    @Flag(help: "Print one JSON object with an apps array.")
    var json = false

    @Option(help: ArgumentHelp("Let a quarantined extension run again.", valueName: "bundle-id"))
    var clearQuarantine: String?

    struct Report: Encodable { var apps: [AppInfo] }

    func run() throws {
        let session = try daemon.connect()
        if let clearQuarantine {
            let request = Request.clearQuarantine(app: clearQuarantine)
            let result = try session.call(request)
            guard case .ok = result else { throw session.unexpected(result, to: request) }
            if !json { print("\(clearQuarantine): quarantine cleared") }
        }
        let result = try session.call(.listApps)
        guard case .apps(let apps) = result else { throw session.unexpected(result, to: .listApps) }
        if json {
            print(jsonLine(Report(apps: apps)))
            return
        }
        guard !apps.isEmpty else {
            print("no apps registered (install one with `ba install APP_DIR`)")
            return
        }
        let formatter = ISO8601DateFormatter()
        for app in apps {
            print("\(app.bundleIdentifier) \(app.version)\(app.launched ? "" : " (not launched yet)")")
            var table = TextTable(["field", "value"])
            table.rows.append(["app group", app.appGroupIdentifier ?? "none"])
            table.rows.append(["directory", app.appDirectory])
            table.rows.append(["extension", app.extensionPath ?? "none"])
            if !app.launched {
                table.rows.append([
                    "allowance left",
                    "\(app.downloadAllowanceRemaining.map(HumanReadable.bytes) ?? "unlimited"), essential "
                        + (app.essentialDownloadAllowanceRemaining.map(HumanReadable.bytes) ?? "unlimited"),
                ])
            }
            if let runtime = app.runtimeRemainingSeconds {
                table.rows.append(["runtime left today", String(format: "%.0f s", runtime)])
            }
            if let next = app.nextPeriodicRun {
                table.rows.append(["next periodic run", formatter.string(from: Date(timeIntervalSince1970: next))])
            }
            if let quarantine = app.quarantine { table.rows.append(["QUARANTINED", quarantine]) }
            if let retry = app.manifestRetry { table.rows.append(["manifest", retry]) }
            if let warning = app.packKeyWarning { table.rows.append(["WARNING", warning]) }
            for run in app.lastRuns {
                let when = formatter.string(from: Date(timeIntervalSince1970: run.startedAt))
                table.rows.append([
                    "run \(when)",
                    "\(run.event): \(run.verdict)\(run.detail.map { " (\($0))" } ?? "") in \(run.durationMilliseconds) ms",
                ])
            }
            print(table.render(header: false, indent: "  "))
        }
    }
}
