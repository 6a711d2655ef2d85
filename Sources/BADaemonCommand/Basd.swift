import ArgumentParser
import BADaemon
import BADaemonProtocol
import Dispatch
import Foundation

/// `basd`: parses flags, starts ``DaemonServer``, and shuts it down on SIGTERM or SIGINT. The `basd`
/// executable runs it, and so does `ba` when started as `basd` (the package installs one binary
/// for both: scripts/install.sh).
package struct Basd: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "basd",
        abstract: "The Background Assets daemon (one per user).",
        discussion: """
            Prints "basd listening on PATH" once clients can connect. Exits 0 after a graceful shutdown \
            on SIGTERM or SIGINT, 1 when it cannot start (e.g. another basd holds the state directory).

            Socket activation: started by systemd's basd.socket (LISTEN_PID is basd's pid, LISTEN_FDS >= 1), \
            basd serves on the listening unix socket passed as fd 3 instead of binding --socket, and leaves \
            the socket file to systemd. `ba service install` writes the units (docs/operations.md).

            Apps are found, as .desktop files are, in background-assets/apps/ of $XDG_DATA_HOME and \
            $XDG_DATA_DIRS (an app directory or a symlink to one per name): a new registration is installed, \
            a changed Info.plist updated, a removed one uninstalled (--no-app-discovery turns it off).

            Examples:
              basd
              basd --state-dir /srv/assets/state --socket /run/user/1000/ba.sock
            """,
        version: DaemonServer.version)

    @Option(
        name: .customLong("state-dir"),
        help:
            "basd's state folder (env BA_STATE_DIR; default $XDG_DATA_HOME/background-assets or ~/.local/share/background-assets)."
    )
    var stateDirectory: String?

    @Option(
        name: .customLong("socket"),
        help:
            "The unix socket (env BA_SOCKET; default $XDG_RUNTIME_DIR/background-assets/basd.sock or /tmp/background-assets-UID/basd.sock)."
    )
    var socketPath: String?

    @Option(
        name: .customLong("config"),
        help:
            "basd's settings file (env BA_CONFIG; default $XDG_CONFIG_HOME/background-assets/config.json, or STATE_DIR/config.json where one is left from an older basd)."
    )
    var settingsPath: String?

    @Flag(
        name: .customLong("no-app-discovery"),
        help:
            "Do not install apps registered in the drop-in folders background-assets/apps of $XDG_DATA_HOME and $XDG_DATA_DIRS (docs/operations.md)."
    )
    var noAppDiscovery = false

    @Flag(
        name: .customLong("no-desktop-bus"),
        help:
            "Do not talk to the desktop over D-Bus: no launcher progress, no metered-network or power-profile signals (docs/operations.md)."
    )
    var noDesktopBus = false

    @Option(
        name: .customLong("exit-when-idle"),
        help: ArgumentHelp(
            "Socket-activated: exit after SECONDS with nothing to do (no client, no download, nothing due within basd.timer's 15 min); its socket starts basd again. `ba service install` sets 300.",
            valueName: "SECONDS"))
    var exitWhenIdle: Double?

    /// How much basd logs.
    enum LogLevel: String, ExpressibleByArgument, CaseIterable {
        case warning, info, debug
    }

    @Option(
        name: .customLong("log-level"),
        help:
            "warning: only lines that report a failure; info: every line (the default); debug: also libcurl's trace of every request."
    )
    var logLevel: LogLevel = .info

    /// `path` made absolute against the current folder.
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/")
            ? path
            : URL(
                fileURLWithPath: path,
                relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
            ).standardizedFileURL.path
    }

    package init() {}

    package func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        var configuration = DaemonServer.Configuration(
            // Absolute, so the paths basd reports (containers, lock files, finished files) do not
            // depend on the folder basd was started in.
            stateDirectory: Self.absolute(stateDirectory ?? DaemonProtocol.defaultStateDirectory(environment)),
            socketPath: socketPath ?? DaemonProtocol.defaultSocketPath(environment))
        configuration.settingsPath = settingsPath ?? environment["BA_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
        configuration.traceTransfers = logLevel == .debug
        if noAppDiscovery { configuration.appDiscoveryFolders = [] }
        if noDesktopBus { configuration.desktopBuses = DesktopBusAddresses.none }
        if let exitWhenIdle {
            guard exitWhenIdle.isFinite, exitWhenIdle > 0 else {
                throw ValidationError(
                    "--exit-when-idle takes a number of seconds above 0 (e.g. 300), not \(exitWhenIdle)")
            }
            configuration.exitWhenIdle = exitWhenIdle
        }
        if logLevel == .warning { configuration.log = DaemonServer.log(level: .warning) }
        let server: DaemonServer
        do {
            // First, before anything could start a child that inherits LISTEN_* or fd 3.
            configuration.activatedSocket = try DaemonServer.ActivatedSocket.fromEnvironment()
            if let activated = configuration.activatedSocket, let socketPath, socketPath != activated.path {
                configuration.log("socket-activated on \(activated.path): --socket \(socketPath) is not used")
            }
            server = try await DaemonServer.start(configuration)
        } catch {
            FileHandle.standardError.write(Data("basd: \(error)\n".utf8))
            throw ExitCode.failure
        }
        // Handled (a clean shutdown), not the default action, which would skip the cleanup.
        do {
            try ShutdownSignals.install { _ in Task { await server.shutdown() } }
        } catch {
            FileHandle.standardError.write(Data("basd: \(error)\n".utf8))
            throw ExitCode.failure
        }
        // FileHandle writes unbuffered: the line is out before anyone waits for it.
        FileHandle.standardOutput.write(Data("basd listening on \(server.configuration.socketPath)\n".utf8))
        do {
            try await server.run()
        } catch {
            FileHandle.standardError.write(Data("basd: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }
}
