import ArgumentParser
import BADaemonProtocol

/// `ba status`: whether basd runs, and its counters.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show whether basd is running, its version, pid, uptime, connections, apps and active downloads.",
        discussion: """
            Exits 0 when basd answered, 30 when it is not running (nothing listens on the socket).

            Examples:
              ba status
              ba status --json --socket /tmp/my-basd.sock
            """)

    @OptionGroup var daemon: DaemonOptions

    @Flag(help: "Print one JSON object (also when basd is not running: {\"running\": false, …}).")
    var json = false

    /// `--json`'s object.
    struct Report: Encodable {
        var running: Bool
        var socket: String
        var error: String?
        var daemonVersion: String?
        var protocolVersion: Int?
        var pid: Int32?
        var uptimeSeconds: Double?
        var connections: Int?
        var registeredApps: Int?
        var activeDownloads: Int?
    }

    func run() throws {
        let session: DaemonSession
        do {
            session = try daemon.tryConnect()
        } catch {
            if json { print(jsonLine(Report(running: false, socket: daemon.socketPath, error: error.message))) }
            throw DaemonSession.unavailable(error)
        }
        let result = try session.call(.status)
        guard case .status(let status) = result else { throw session.unexpected(result, to: .status) }
        if json {
            print(
                jsonLine(
                    Report(
                        running: true, socket: session.socketPath, daemonVersion: status.daemonVersion,
                        protocolVersion: status.protocolVersion, pid: status.pid,
                        uptimeSeconds: status.uptimeSeconds, connections: status.connections,
                        registeredApps: status.registeredApps, activeDownloads: status.activeDownloads)))
            return
        }
        print("basd \(status.daemonVersion) is running (pid \(status.pid)) on \(session.socketPath)")
        var table = TextTable(["field", "value"])
        table.rows = [
            ["uptime", HumanReadable.duration(seconds: status.uptimeSeconds)],
            ["connections", "\(status.connections) (this one included)"],
            ["apps", "\(status.registeredApps) registered"],
            ["downloads", "\(status.activeDownloads) active"],
            ["protocol", "version \(status.protocolVersion)"],
        ]
        print(table.render(header: false, indent: "  "))
    }
}
