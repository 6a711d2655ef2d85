import BADaemonProtocol
import BATestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What the basd end-to-end tests ask basd through a real `ba` process (`--json`), and the
/// bounded poll they wait with.
enum CLIQueries {
    static let ba = BuildProducts.executable("ba")

    /// `ba downloads --json --app APP --limit 0`'s rows (all of them).
    static func downloadRows(_ daemon: DaemonProcess, app: String) async throws -> [[String: Any]] {
        let output = try await runProcess(
            ba, ["downloads", "--json", "--app", app, "--limit", "0", "--socket", daemon.socketPath])
        guard output.status == 0,
            let object = (try? JSONSerialization.jsonObject(with: Data(output.stdout.utf8))) as? [String: Any],
            let rows = object["downloads"] as? [[String: Any]]
        else { throw HarnessError("ba downloads --json: \(output.status) \(output.stdout)\(output.stderr)") }
        return rows
    }

    /// The first (only) app of `ba apps --json`.
    static func app(_ daemon: DaemonProcess) async throws -> [String: Any] {
        let output = try await runProcess(ba, ["apps", "--json", "--socket", daemon.socketPath])
        let object = (try? JSONSerialization.jsonObject(with: Data(output.stdout.utf8))) as? [String: Any]
        guard let app = (object?["apps"] as? [[String: Any]])?.first else {
            throw HarnessError("ba apps --json: \(output.status) \(output.stdout)\(output.stderr)")
        }
        return app
    }

    /// The app's process connects to basd (what `BADownloadManager` does): a launch, the first
    /// one lifting the pre-launch restrictions.
    static func launch(_ daemon: DaemonProcess, app: String) throws {
        let client = try daemon.appClient(app)
        client.close()
    }

    /// Reads with `read` until `condition` holds on what it read; throws after `timeout` seconds
    /// with the last value and basd's log.
    static func poll<T>(
        _ what: String, _ daemon: DaemonProcess, timeout: Double, read: () async throws -> T,
        until condition: (T) -> Bool
    ) async throws -> T {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            let value = try await read()
            if condition(value) { return value }
            guard Date() < deadline else {
                throw HarnessError("timed out waiting for \(what): \(value)\n\(daemon.standardError)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// ``poll(_:_:timeout:read:until:)`` over the app's rows of `ba downloads --json`.
    static func pollDownloads(
        _ what: String, _ daemon: DaemonProcess, app: String, timeout: Double,
        until condition: ([[String: Any]]) -> Bool
    ) async throws -> [[String: Any]] {
        try await poll(
            what, daemon, timeout: timeout, read: { try await downloadRows(daemon, app: app) }, until: condition)
    }
}
