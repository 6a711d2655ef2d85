import ArgumentParser
import BACore
import BADaemonProtocol
import Foundation

/// `ba downloads`: the downloads basd knows, of every app or of one, in some states.
struct Downloads: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the downloads basd knows, of every app or of one.",
        discussion: """
            One row per download, by app and then oldest first: app, identifier, unique identifier (its first \
            8 characters; `ba promote` and `ba cancel` accept that prefix), state, bytes on disk / expected size, \
            priority, essential, foreground, transfer attempts and the last error (or, for a download one of whose events \
            is parked, why: the app's extension failed on it too often and it waits for the app). At most --limit rows \
            (\(Self.defaultLimit) unless told); a last line says how many more matched.

            States: created, waiting, downloading (the active ones; `active` stands for the three), finished, \
            failed.

            Examples:
              ba downloads
              ba downloads --app com.example.game --state failed --json
              ba downloads --state waiting,downloading --limit 0
            """)

    /// Rows shown unless `--limit` says otherwise.
    static let defaultLimit = 1_000

    @OptionGroup var daemon: DaemonOptions

    @Option(help: "Only this app's downloads (its bundle identifier).")
    var app: String?

    @Option(
        name: .customLong("state"),
        help: ArgumentHelp(
            "Only downloads in this state; repeat it or give a comma list (created, waiting, downloading, active, "
                + "finished, failed).", valueName: "STATE"))
    var states: [String] = []

    @Option(help: "Show at most this many downloads; 0 shows all.")
    var limit = Self.defaultLimit

    @Flag(help: "Print one JSON object, {\"downloads\": […], \"notShown\": N}, with full unique identifiers.")
    var json = false

    typealias Row = DownloadRow

    struct Report: Encodable {
        var downloads: [Row]
        /// How many more matched than `--limit` let through.
        var notShown: Int
    }

    /// The `--state` values, each option split at commas.
    var stateNames: [String] {
        states.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map {
            $0.trimmingCharacters(in: .whitespaces)
        }
    }

    func validate() throws {
        guard limit >= 0 else { throw ValidationError("--limit must be 0 (all) or more, not \(limit)") }
        do {
            _ = try DownloadListing.states(stateNames)
        } catch {
            throw ValidationError("--state: \(error)")
        }
    }

    func run() throws {
        let session = try daemon.connect()
        let request = Request.listDownloads(app: app, states: states.isEmpty ? nil : stateNames, limit: limit)
        let result = try session.call(request)
        guard case .downloadList(let listing) = result else { throw session.unexpected(result, to: request) }
        let rows = listing.downloads.map(Row.init)
        if json {
            print(jsonLine(Report(downloads: rows, notShown: listing.notShown)))
            return
        }
        if rows.isEmpty && listing.notShown == 0 {
            let inStates = states.isEmpty ? "" : " in state \(stateNames.joined(separator: ", "))"
            print("no downloads" + (app.map { " for \($0)" } ?? "") + inStates)
            return
        }
        if !rows.isEmpty { print(Self.table(rows)) }
        if listing.notShown > 0 {
            print("\(listing.notShown) more not shown; use --limit 0 for all")
        }
    }

    static func table(_ rows: [Row]) -> String {
        var table = TextTable([
            "APP", "IDENTIFIER", "UNIQUE ID", "STATE", "BYTES", "PRIORITY", "ESSENTIAL", "FOREGROUND", "ATTEMPTS",
            "LAST ERROR",
        ])
        for row in rows {
            table.append([
                row.appIdentifier ?? "-", row.identifier, String(row.uniqueIdentifier.prefix(8)),
                // A download waiting for disk space says so; so does one with a parked event.
                row.waitingFor.map {
                    "\(row.state) (\(WaitingText.text($0, queuePosition: row.queuePosition))\(Self.nextAttempt(row)))"
                }
                    ?? (row.parkedEvent != nil ? "\(row.state) (event parked)" : row.state),
                HumanReadable.bytes(row.bytesOnDisk) + " / " + (row.fileSize.map(HumanReadable.bytes) ?? "?"),
                "\(row.priority)", row.essential ? "yes" : "no", row.foreground ? "yes" : "no",
                row.attempts.map(String.init) ?? "-",
                lastError(row),
            ])
        }
        return table.render()
    }

    /// `" until 11:23:05"` for a download waiting for a retry, else "".
    static func nextAttempt(_ row: Row) -> String {
        guard let at = row.nextAttemptAt else { return "" }
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss"
        return " until " + formatter.string(from: Date(timeIntervalSince1970: at))
    }

    /// `CODE: MESSAGE`, or `-` when no attempt failed; why an event is parked, when one is.
    static func lastError(_ row: Row) -> String {
        if let parked = row.parkedEvent { return parked }
        return switch (row.errorCode, row.errorMessage) {
        case (let code?, let message?): "\(code): \(message)"
        case (nil, let message?): message
        case (let code?, nil): "error \(code)"
        case (nil, nil): "-"
        }
    }
}

/// One download in `--json`'s output.
package struct DownloadRow: Encodable {
    package var appIdentifier: String?
    package var identifier: String
    package var uniqueIdentifier: String
    package var url: String
    package var state: String
    package var stateValue: Int
    package var bytesOnDisk: Int64
    package var fileSize: Int64?
    package var priority: Int64
    package var essential: Bool
    package var foreground: Bool
    package var attempts: Int?
    package var errorCode: Int?
    package var errorMessage: String?
    package var applicationGroupIdentifier: String?
    package var sha256: String?
    /// What an active download waits for (`space`, `retry`, `lowPowerMode`, `meteredNetwork`,
    /// `offline`, `captivePortal`, `limitedConnectivity`, `queue`), if anything.
    package var waitingFor: String?
    /// With `waitingFor` `queue`: its place in line, 1 for the next to start.
    package var queuePosition: Int?
    /// When a download waiting for a retry tries again (seconds since 1970).
    package var nextAttemptAt: Double?
    /// Why one of its events is parked (the extension failed on it too often; it waits for the
    /// app), if one is.
    package var parkedEvent: String?

    package init(_ info: DownloadInfo) {
        appIdentifier = info.appIdentifier
        identifier = info.download.identifier
        uniqueIdentifier = info.uniqueIdentifier
        url = info.download.url
        state = Self.stateName(info.state.rawValue)
        stateValue = info.state.rawValue
        bytesOnDisk = info.bytesOnDisk
        fileSize = info.download.expectedSize
        priority = info.download.priority
        essential = info.download.isEssential
        foreground = info.isForeground
        attempts = info.attempts
        errorCode = info.errorCode
        errorMessage = info.errorMessage
        applicationGroupIdentifier = info.download.applicationGroupIdentifier
        sha256 = info.download.sha256
        waitingFor = info.waitingFor
        queuePosition = info.queuePosition
        nextAttemptAt = info.nextAttemptAt
        parkedEvent = info.parkedEvent
    }

    /// `BADownload.State`'s name for its raw value.
    package static func stateName(_ state: Int) -> String {
        DownloadState(rawValue: state)?.description ?? "state \(state)"
    }
}
