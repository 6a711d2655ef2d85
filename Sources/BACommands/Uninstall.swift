import ArgumentParser
import BADaemonProtocol
import Foundation

/// `ba uninstall BUNDLE_ID`: what a package's removal hook calls.
struct Uninstall: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Uninstall an app: cancel its downloads, forget it, and delete its app group container.",
        discussion: """
            basd waits for a running call of the app's extension to end (never longer than the call's \
            deadline), cancels the app's downloads and deletes their partial files, removes its registration, \
            downloads, events and extension runs, and deletes its app group container \
            (STATE_DIR/groups/GROUP) unless --keep-data is given or another registered app shares the group. \
            Idempotent: an app that is not registered is not an error (exit 0, "not registered"), so a removal \
            hook may run it twice. Exit codes: 0 uninstalled or not registered; 30 basd not running; 31 the \
            connection broke; 33 basd refused; 73 the registration is gone but the container could not be \
            deleted (the cause is printed).

            Examples:
              ba uninstall com.example.game
              ba uninstall com.example.game --keep-data
            """)

    @OptionGroup var daemon: DaemonOptions

    @Argument(help: ArgumentHelp("The app's bundle identifier.", valueName: "bundle-id"))
    var bundleIdentifier: String

    @Flag(help: "Keep the app group container (the app's files and finished downloads).")
    var keepData = false

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    func run() throws {
        let session = try daemon.connect()
        let request = Request.uninstallApp(app: bundleIdentifier, keepData: keepData)
        let result = try session.call(request)
        guard case .uninstalled(let report) = result else { throw session.unexpected(result, to: request) }
        if json {
            print(jsonLine(report))
        } else if !report.wasRegistered {
            print("\(bundleIdentifier) is not registered with basd; nothing to uninstall")
        } else {
            print("uninstalled \(bundleIdentifier) \(report.version ?? "")")
            print("  cancelled \(report.cancelledDownloads) active download(s)")
            if let removed = report.removedContainer { print("  deleted its app group container \(removed)") }
            if let kept = report.keptContainer { print("  kept its app group container: \(kept)") }
        }
        if let error = report.containerError {
            printError("\(bundleIdentifier) is uninstalled, but its container was not deleted: \(error)")
            throw ExitCode(BAExitCode.cannotWrite.rawValue)
        }
    }
}
