import BADaemonProtocol
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real `basd` process (a ``ChildProcess``) with a temporary state folder and socket, and its
/// own settings (``TestSettings``: `XDG_CONFIG_HOME` in the temporary folder, `allowedHosts`
/// loopback): the one way every suite starts a basd. Killed with SIGKILL by ``kill()`` (call it in
/// a `defer`) if it is still running.
///
/// ```swift
/// let daemon = try await DaemonProcess.start()
/// defer { daemon.kill() }
/// try daemon.register("com.example.game", group: "group.com.example.game")
/// let app = try daemon.appClient("com.example.game")
/// ```
package final class DaemonProcess: @unchecked Sendable {
    /// The temporary folder: `state/` (``stateDirectory``), `run/basd.sock` (``socketPath``), `config/`.
    package let directory: TemporaryDirectory
    package let stateDirectory: String
    package let socketPath: String
    /// The basd process (or the launcher that execs it).
    package let child: ChildProcess
    /// How it was started, for ``restarted()``.
    private let environment: [String: String]
    private let descriptorLimit: Int?
    private let arguments: [String]
    private let launcher: [String]
    private let executable: String

    /// Starts basd and returns once it printed its listening line (at most `timeout` seconds).
    ///
    /// - Parameters:
    ///   - directory: its folder (a new temporary one when nil); a folder a stopped basd used
    ///     starts a basd on the same state.
    ///   - environment: added to basd's (``TestSettings/prepare(stateDirectory:environment:)``
    ///     sets `XDG_CONFIG_HOME` and `BA_CONFIG` unless given here).
    ///   - descriptorLimit: basd runs under `ulimit -n` of that many.
    ///   - arguments: more arguments after `--state-dir` and `--socket` (e.g. `--log-level debug`).
    ///   - launcher: a command that execs the rest (e.g. `unshare … --`), so that ``pid`` is basd's.
    ///   - executable: the basd to run (default: this build's).
    /// - Throws: ``HarnessError`` when basd exits or prints something else first, or after `timeout`.
    package init(
        directory: TemporaryDirectory? = nil, environment: [String: String] = [:], timeout: Double = 20,
        descriptorLimit: Int? = nil, arguments: [String] = [], launcher: [String] = [],
        executable: String = BuildProducts.executable("basd")
    ) throws {
        self.directory = try directory ?? TemporaryDirectory()
        stateDirectory = self.directory.path + "/state"
        socketPath = self.directory.path + "/run/basd.sock"
        (self.environment, self.descriptorLimit, self.arguments, self.launcher, self.executable) =
            (environment, descriptorLimit, arguments, launcher, executable)
        var command = launcher
        if let descriptorLimit { command += ["/bin/sh", "-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\""] }
        command +=
            [executable, "--state-dir", stateDirectory, "--socket", socketPath] + arguments
        // Its own settings folder (never the developer's), downloads to loopback only.
        let environment = try TestSettings.prepare(stateDirectory: stateDirectory, environment: environment)
        child = try ChildProcess(command[0], Array(command.dropFirst()), environment: environment)
        do {
            try child.wait("basd's listening line", timeout: timeout) { !$0.stdoutLines.isEmpty }
        } catch {
            kill()
            throw error
        }
        let line = child.stdoutLines[0]
        guard line == "basd listening on \(socketPath)" else {
            kill()
            throw HarnessError("basd printed \(line.debugDescription), not its listening line: \(child.stderr)")
        }
    }

    /// Starts basd as ``init(directory:environment:timeout:descriptorLimit:arguments:launcher:executable:)``
    /// does, waiting for its listening line on a thread of its own rather than on the concurrency pool.
    package static func start(
        directory: TemporaryDirectory? = nil, environment: [String: String] = [:], timeout: Double = 20,
        descriptorLimit: Int? = nil, arguments: [String] = [], launcher: [String] = [],
        executable: String = BuildProducts.executable("basd")
    ) async throws -> DaemonProcess {
        try await offThePool {
            try DaemonProcess(
                directory: directory, environment: environment, timeout: timeout, descriptorLimit: descriptorLimit,
                arguments: arguments, launcher: launcher, executable: executable)
        }
    }

    /// basd's pid.
    package var pid: pid_t { child.pid }

    /// What basd wrote to standard error so far: its log.
    package var standardError: String { child.stderr }

    /// Whether basd's log has `text` within `timeout` seconds (waiting on a thread of its own,
    /// looking again whenever basd writes). A log line about something a test saw through another
    /// channel (a listing, an answer, a file, an event) can reach the pipe after it: reading
    /// ``standardError`` once then is a race a loaded machine loses.
    ///
    /// ```swift
    /// #expect(await daemon.logged("its extension declined extras"), "\(daemon.standardError)")
    /// ```
    package func logged(_ text: String, timeout: Double = 30) async -> Bool {
        do {
            try await child.waiting("basd's log line \(text.debugDescription)", timeout: timeout) {
                $0.stderr.contains(text)
            }
            return true
        } catch {
            return child.stderr.contains(text)
        }
    }

    /// Sends `signal` to basd.
    package func send(_ signal: Int32) { child.signal(signal) }

    /// Waits for basd to exit; its status (128 + the signal that ended it), or nil after `timeout`
    /// seconds.
    package func waitForExit(timeout: Double) -> Int32? {
        child.waitForExit(timeout: timeout, readingToTheEnd: false)
    }

    /// SIGKILLs basd if it still runs, and removes the temporary folder.
    package func kill() {
        stop()
        directory.remove()
    }

    /// SIGKILLs basd if it still runs and keeps the folder (for a basd to start on it again).
    package func stop() {
        if child.isRunning { child.signal(SIGKILL) }
        _ = child.waitForExit(timeout: 10, readingToTheEnd: false)
    }

    /// SIGKILLs basd if it still runs and starts a new one on the same folder (state, socket,
    /// settings), as it was started.
    package func restarted(timeout: Double = 20) async throws -> DaemonProcess {
        stop()
        return try await Self.start(
            directory: directory, environment: environment, timeout: timeout, descriptorLimit: descriptorLimit,
            arguments: arguments, launcher: launcher, executable: executable)
    }

    // MARK: - What most tests do first

    /// Registers an app through a CLI connection, with this basd's folder as the app's directory
    /// unless `appDirectory` is given.
    package func register(
        _ bundleIdentifier: String, version: String = "1.0", group: String?, appDirectory: String? = nil,
        extensionPath: String? = nil
    ) throws(DaemonClientError) {
        let cli = try DaemonClient(socketPath: socketPath, client: ClientInfo(role: .cli, pid: getpid()))
        defer { cli.close() }
        try cli.call(
            .registerApp(
                AppRegistration(
                    bundleIdentifier: bundleIdentifier, version: version, appGroupIdentifier: group,
                    appDirectory: appDirectory ?? directory.path, extensionPath: extensionPath)))
    }

    /// A connection as the app `bundleIdentifier`'s process (this test's pid), its events handed to `onEvent`.
    package func appClient(
        _ bundleIdentifier: String, onEvent: @escaping @Sendable (DownloadEvent) -> Void = { _ in }
    ) throws(DaemonClientError) -> DaemonClient {
        try DaemonClient(
            socketPath: socketPath, client: ClientInfo(role: .app, bundleIdentifier: bundleIdentifier, pid: getpid()),
            onEvent: onEvent)
    }

    /// A connection as `ba` (role `cli`).
    package func cliClient() throws(DaemonClientError) -> DaemonClient {
        try DaemonClient(socketPath: socketPath, client: ClientInfo(role: .cli, pid: getpid()))
    }
}

/// Runs `basd` to completion (for the ones expected to exit by themselves), bounded by a SIGKILL
/// after `timeout` seconds; its status is 128 + the signal when one ended it.
package func runDaemonToExit(
    stateDirectory: String, socketPath: String, timeout: Double = 20
) throws -> ProcessOutput {
    let child = try ChildProcess(
        BuildProducts.executable("basd"), ["--state-dir", stateDirectory, "--socket", socketPath],
        environment: try TestSettings.prepare(stateDirectory: stateDirectory))
    guard let status = child.waitForExit(timeout: timeout) else {
        child.kill()
        throw HarnessError("basd did not exit within \(timeout) s")
    }
    return ProcessOutput(status: status, stdout: child.stdout, stderr: child.stderr)
}

extension DaemonProcess {
    /// Starts basd the way systemd starts a socket-activated service: `descriptor` as fd 3 and
    /// `LISTEN_FDS=1`, `LISTEN_PID` = basd's pid (set by a shell that then execs basd, so the pid is
    /// the same) unless `listenPID` says otherwise; its stdout and stderr are one pipe, read into
    /// the child's ``ChildProcess/stdout``. The caller waits for its listening line (or its exit).
    /// Its settings are a test's (``TestSettings``) when `arguments` has `--state-dir`.
    package static func activated(
        descriptor: Int32, arguments: [String], listenPID: String = "$$"
    ) throws -> ChildProcess {
        let script = "LISTEN_PID=\(listenPID) LISTEN_FDS=1; export LISTEN_PID LISTEN_FDS; exec \"$0\" \"$@\""
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LISTEN_") }
        if let flag = arguments.firstIndex(of: "--state-dir"), flag + 1 < arguments.count {
            // Its own settings folder (never the developer's), downloads to loopback only.
            environment.merge(try TestSettings.prepare(stateDirectory: arguments[flag + 1])) { $1 }
        }
        return try ChildProcess(
            spawning: ["/bin/sh", "-c", script, BuildProducts.executable("basd")] + arguments,
            environment: environment, descriptor3: descriptor)
    }
}
