import ArgumentParser
import BADaemonProtocol
import Foundation

/// `ba downloads`: every app's downloads as basd knows them.
struct Downloads: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the downloads basd knows, of every app or of one.",
        discussion: """
            One row per download: app, identifier, unique identifier (its first 8 characters; `ba promote` and \
            `ba cancel` accept that prefix), state, bytes on disk / expected size, priority, essential, \
            foreground, transfer attempts and the last error.

            Examples:
              ba downloads
              ba downloads --app com.example.game --json
            """)

    @OptionGroup var daemon: DaemonOptions

    @Option(help: "Only this app's downloads (its bundle identifier).")
    var app: String?

    @Flag(help: "Print one JSON object, {\"downloads\": […]}, with full unique identifiers.")
    var json = false

    typealias Row = DownloadRow

    struct Report: Encodable { var downloads: [Row] }

    func run() throws {
        let session = try daemon.connect()
        let request = Request.listDownloads(app: app)
        let result = try session.call(request)
        guard case .downloads(let infos) = result else { throw session.unexpected(result, to: request) }
        let rows = infos.map(Row.init).sorted {
            ($0.appIdentifier ?? "", $0.identifier, $0.uniqueIdentifier)
                < ($1.appIdentifier ?? "", $1.identifier, $1.uniqueIdentifier)
        }
        if json {
            print(jsonLine(Report(downloads: rows)))
            return
        }
        guard !rows.isEmpty else {
            print(app.map { "no downloads for \($0)" } ?? "no downloads")
            return
        }
        print(Self.table(rows))
    }

    static func table(_ rows: [Row]) -> String {
        var table = TextTable([
            "APP", "IDENTIFIER", "UNIQUE ID", "STATE", "BYTES", "PRIORITY", "ESSENTIAL", "FOREGROUND", "ATTEMPTS",
            "LAST ERROR",
        ])
        for row in rows {
            table.append([
                row.appIdentifier ?? "-", row.identifier, String(row.uniqueIdentifier.prefix(8)),
                // A download waiting for disk space says so.
                row.waitingFor.map { "\(row.state) (waiting for \($0)\(Self.nextAttempt(row)))" } ?? row.state,
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

    /// `CODE: MESSAGE`, or `-` when no attempt failed.
    static func lastError(_ row: Row) -> String {
        switch (row.errorCode, row.errorMessage) {
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
    /// What an active download waits for (`space`, `retry`, `lowPowerMode`), if anything.
    package var waitingFor: String?
    /// When a download waiting for a retry tries again (seconds since 1970).
    package var nextAttemptAt: Double?

    package init(_ info: DownloadInfo) {
        appIdentifier = info.appIdentifier
        identifier = info.download.identifier
        uniqueIdentifier = info.uniqueIdentifier
        url = info.download.url
        state = Self.stateName(info.state)
        stateValue = info.state
        bytesOnDisk = info.bytesOnDisk
        fileSize = info.download.fileSize
        priority = info.download.priority
        essential = info.download.isEssential
        foreground = info.isForeground
        attempts = info.attempts
        errorCode = info.errorCode
        errorMessage = info.errorMessage
        applicationGroupIdentifier = info.download.applicationGroupIdentifier
        sha256 = info.download.sha256
        waitingFor = info.waitingFor
        nextAttemptAt = info.nextAttemptAt
    }

    /// `BADownload.State`'s name for its raw value.
    package static func stateName(_ state: Int) -> String {
        switch state {
        case -1: "failed"
        case 0: "created"
        case 1: "waiting"
        case 2: "downloading"
        case 3: "finished"
        default: "state \(state)"
        }
    }
}
