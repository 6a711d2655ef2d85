import ArgumentParser
import BADaemonProtocol
import Foundation

/// `ba purge`: what basd deletes under disk pressure.
struct Purge: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show (--dry-run) or carry out what basd purges when free space is under its threshold.",
        discussion: """
            Finished files that are unmodified since they finished, not open by any process, and delivered \
            to the app are purgeable; basd deletes the least recently used first, only while free space on its \
            state directory's file system is under purgeFreeSpaceThresholdBytes (default 1 GiB). A modified \
            file is never purged. Nor is one delivered before the app's first launch, or an update's essential \
            file, until the app launches (status awaitingLaunch). See docs/purging.md.

            Examples:
              ba purge --dry-run
              ba purge --dry-run --json
              ba purge
            """)

    @OptionGroup var daemon: DaemonOptions

    @Flag(help: "List every tracked file, its status and why it would go or stay; delete nothing.")
    var dryRun = false

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    func run() throws {
        let session = try daemon.connect()
        let request = Request.purge(dryRun: dryRun)
        let result = try session.call(request)
        guard case .purge(let report) = result else { throw session.unexpected(result, to: request) }
        if json {
            print(jsonLine(report))
            return
        }
        let verb = dryRun ? "would free" : "freed"
        print(
            "free space \(HumanReadable.bytes(report.freeBytes)), threshold \(HumanReadable.bytes(report.thresholdBytes)): "
                + "\(verb) \(HumanReadable.bytes(report.bytesFreed))")
        guard !report.entries.isEmpty else {
            print("no finished files are tracked")
            return
        }
        var table = TextTable(["", "app", "identifier", "size", "status", "reason"])
        for entry in report.entries {
            table.rows.append([
                entry.wouldDelete ? (dryRun ? "would delete" : "deleted") : "keep", entry.appIdentifier,
                entry.identifier, HumanReadable.bytes(entry.size), entry.status, entry.reason,
            ])
        }
        print(table.render())
    }
}
