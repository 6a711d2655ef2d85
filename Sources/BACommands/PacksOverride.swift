import ArgumentParser
import BADaemonProtocol
import Foundation

/// `ba packs override APP URL` / `--clear`: the device's half of the local test loop.
struct PacksOverride: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "override", abstract: "Point an app's download manifest at a local test server, until cleared.",
        discussion: """
            basd reads URL instead of the app's BAManifestURL (at once, and at every check) until \
            `ba packs override APP --clear`, across basd restarts; `ba packs` shows it. The URL must be on this \
            machine (127.0.0.1, ::1, localhost: `ba pack serve`) and pass basd's allowedHosts. An app with \
            BAAssetPackPublicKey still needs a manifest signed with its key (`ba pack publish --key … --app APP`). \
            The test server's manifests have their own sequence; the CDN's is kept for when the override is \
            cleared. Pack versions may not go below the installed ones (publish with --downgrade, or \
            `ba packs remove` first). See docs/packs.md, "Testing packs locally".

            Examples:
              ba packs override com.example.game http://127.0.0.1:8080/manifest.json
              ba packs override com.example.game --clear
            """)

    @OptionGroup var daemon: DaemonOptions

    @Argument(help: "The app's bundle identifier.")
    var app: String

    @Argument(help: "The download manifest URL to use (`ba pack serve`'s URL/manifest.json).")
    var url: String?

    @Flag(help: "Go back to the app's BAManifestURL.")
    var clear = false

    func validate() throws {
        guard (url == nil) == clear else {
            throw ValidationError("give a URL, or --clear (not both)")
        }
    }

    func run() throws {
        let session = try daemon.connect()
        let report = try PackCalls.call(session, PackCommand(action: .override, app: app, url: clear ? nil : url))
        for problem in report.problems { printError("manifest check failed: \(problem)") }
        if let url {
            print("\(app) reads its download manifest from \(url) until `ba packs override \(app) --clear`")
        } else {
            print("\(app) reads its download manifest from its BAManifestURL again")
        }
        if !report.packs.isEmpty { print(PackCalls.table(report.packs)) }
        if !report.problems.isEmpty { throw ExitCode(BAExitCode.daemonRefused.rawValue) }
    }
}
