import BADaemonProtocol
import BADownloadEngine
import BAExclusiveControl
import BAScheduling
import BASettings
import BAStore
import Foundation
import Logging
import NIOCore
import NIOPosix

/// basd's transport: a unix-socket server speaking ``DaemonProtocol`` to clients of the same user.
///
/// ``start(_:)`` takes the state directory's lock (`basd.lock`, so one basd per state directory),
/// opens the store (`state.sqlite`), and binds the socket with mode 0600 in a 0700 folder (or,
/// socket-activated, serves on the listening socket systemd passed: ``ActivatedSocket``). Each
/// connection's peer uid is checked with `SO_PEERCRED`; the first request must be `hello`. The
/// requests are served by the download service (store + engine + extension supervisor), which
/// resumes every active download at start. ``run()`` returns once ``shutdown()`` was called and
/// everything is closed, the transfers stopped with their partial files kept, the socket file
/// removed (unless systemd created it) and the lock released.
///
/// ```swift
/// let server = try await DaemonServer.start(DaemonServer.Configuration(
///     stateDirectory: "/home/me/.local/share/background-assets",
///     socketPath: "/run/user/1000/background-assets/basd.sock"))
/// print("basd listening on \(server.configuration.socketPath)")
/// try await server.run()   // until server.shutdown() (e.g. on SIGTERM)
/// ```
package final class DaemonServer: Sendable {
    /// Where basd keeps its state and listens.
    package struct Configuration: Sendable {
        /// basd's state folder (created 0700): `state.sqlite` and `basd.lock` live there.
        package var stateDirectory: String
        /// The unix socket to listen on; its folder is created 0700 if missing. With
        /// ``activatedSocket`` set, ``DaemonServer/start(_:)`` replaces it with that socket's path.
        package var socketPath: String
        /// A listening socket to serve on instead of binding ``socketPath`` (systemd socket
        /// activation); basd then never creates, chmods or unlinks a socket file. Nil by default.
        package var activatedSocket: ActivatedSocket?
        /// Reported by `status`.
        package var daemonVersion: String
        /// Where diagnostics go (one line per call); standard error by default.
        package var log: @Sendable (String) -> Void
        /// The extension runner; nil finds `ba-extension-runner` next to basd or via `$BA_EXTENSION_RUNNER`.
        package var runnerPath: String?
        /// basd's settings file; nil: ``settingsPath(stateDirectory:environment:)``.
        package var settingsPath: String?
        /// libcurl's trace of every request on standard error (`--log-level debug`).
        package var traceTransfers = false
        /// The drop-in folders apps are registered in (``AppDiscovery``); nil: from the
        /// environment (`$XDG_DATA_HOME`, `$XDG_DATA_DIRS`); empty: no discovery (`--no-app-discovery`).
        package var appDiscoveryFolders: [String]?
        /// The D-Bus buses basd talks to the desktop on (``DesktopIntegration``); nil: from the
        /// environment; ``DesktopBusAddresses/none``: no desktop integration (`--no-desktop-bus`).
        package var desktopBuses: DesktopBusAddresses?
        /// Socket-activated, exit after this many seconds with nothing to do (``IdleExit``);
        /// nil (the default): never. Ignored, with a log line, when basd was not socket-activated:
        /// nothing would start it again.
        package var exitWhenIdle: TimeInterval?
        /// How often something starts basd again when it is not running (`basd.timer`): what is
        /// due sooner keeps an idle basd running.
        package var wakeInterval = TimeInterval(DaemonProtocol.wakeTimerSeconds)

        /// Creates a configuration.
        package init(
            stateDirectory: String, socketPath: String, daemonVersion: String = DaemonServer.version,
            log: @escaping @Sendable (String) -> Void = DaemonServer.logToStandardError
        ) {
            self.stateDirectory = stateDirectory
            self.socketPath = socketPath
            self.daemonVersion = daemonVersion
            self.log = log
        }

        /// The lock file that makes basd exclusive per state directory.
        package var lockPath: String { (stateDirectory as NSString).appendingPathComponent("basd.lock") }
        /// The store's database file.
        package var storePath: String { (stateDirectory as NSString).appendingPathComponent("state.sqlite") }
    }

    /// basd's version string.
    package static let version = ReleaseVersion.string

    /// Writes `line` and a newline to standard error through swift-log at level info: with a
    /// syslog priority prefix when standard error is the journal, with the time otherwise
    /// (``LogFormat``). A line that reports a failure is logged at level warning.
    package static let logToStandardError: @Sendable (String) -> Void = log(level: .info)

    /// basd's log at `level` (`--log-level`): lines below it are dropped.
    package static func log(level: Logger.Level) -> @Sendable (String) -> Void {
        let logger = Logger(label: "basd") { _ in BasdLogHandler(level: level) }
        return { line in logger.log(level: isWarning(line) ? .warning : .info, "\(line)") }
    }

    /// What the server was started with.
    package let configuration: Configuration
    private let lock: ExclusiveControlLock
    private let context: DaemonContext
    private let service: BasdServices
    private let channel: any Channel
    /// Exits basd when idle (``Configuration/exitWhenIdle``), or nil.
    private let idleMonitor: IdleMonitor?

    private init(
        configuration: Configuration, lock: ExclusiveControlLock, context: DaemonContext, service: BasdServices,
        channel: any Channel
    ) {
        self.configuration = configuration
        self.lock = lock
        self.context = context
        self.service = service
        self.channel = channel
        self.idleMonitor = Self.idleMonitor(configuration, service: service, channel: channel)
    }

    /// Starts the ``IdleMonitor`` when basd was socket-activated with ``Configuration/exitWhenIdle``.
    private static func idleMonitor(
        _ configuration: Configuration, service: BasdServices, channel: any Channel
    ) -> IdleMonitor? {
        guard let timeout = configuration.exitWhenIdle else { return nil }
        guard configuration.activatedSocket != nil else {
            configuration.log(
                "idle exit: --exit-when-idle is not used: basd was not started by its socket, and nothing would start it again (docs/operations.md)"
            )
            return nil
        }
        let monitor = IdleMonitor(
            rule: IdleExit(timeout: max(0.1, timeout), wakeInterval: configuration.wakeInterval),
            executor: service.executor, activity: { service.idleActivity() }, now: { service.clock.now },
            log: configuration.log,
            // On the executor, which is also the loop that accepts: no connection slips in between.
            exit: { _ in channel.close(promise: nil) })
        service.executor.async { monitor.start() }
        return monitor
    }

    /// Takes the lock, opens the store and binds the socket; returns once clients can connect.
    ///
    /// - Throws: ``DaemonError``: `.alreadyRunning` (naming the lock file and the holder's pid)
    ///   when another basd uses the state directory; `.directory`, `.lock`, `.store`, `.socket`
    ///   for the step that failed. `.store` also when the store fails SQLite's `quick_check`, or
    ///   holds nothing while the state folder's `groups/` holds app group containers (a copy made
    ///   without its `-wal`): the message names the file and what to do (docs/state.md, "Checked
    ///   at start"). Nothing is left locked or bound when it throws.
    package static func start(_ configuration: Configuration) async throws(DaemonError) -> DaemonServer {
        var configuration = configuration
        if let activated = configuration.activatedSocket { configuration.socketPath = activated.path }
        Setup.raiseDescriptorLimit(log: configuration.log)
        try Setup.makePrivateDirectory(configuration.stateDirectory, what: "state directory")
        let lock = try Setup.takeLock(at: configuration.lockPath)
        do throws(DaemonError) {
            if let activated = configuration.activatedSocket {
                Setup.checkActivatedSocketMode(activated.path, log: configuration.log)
            } else {
                try Setup.prepareSocketPath(configuration.socketPath)
            }
            let store: BAStore
            do throws(BAStoreError) {
                let groups = AppContainers(stateDirectory: configuration.stateDirectory).groupsDirectory
                store = try BAStore.open(
                    path: configuration.storePath,
                    vet: { contents throws(BAStoreError) in
                        try Setup.vetStore(contents, path: configuration.storePath, groupsDirectory: groups)
                    }, log: { [log = configuration.log] in log("store: \($0)") })
            } catch  where error.code == .corrupt || error.code == .stateLost {
                // The message names the file and the ways out; SQLite's own words add nothing.
                throw DaemonError(.store, "cannot start: \(error.message)")
            } catch {
                throw DaemonError(.store, "cannot open basd's state at \(configuration.storePath)", cause: error)
            }
            let settingsPath =
                configuration.settingsPath
                ?? Self.settingsPath(stateDirectory: configuration.stateDirectory, log: configuration.log)
            var settings = SettingsFile(path: settingsPath)
            if case .rejected(let error) = settings.check() {
                try? store.close()
                throw DaemonError(.settings, "basd's settings are not usable: \(error.description)")
            }
            let context = DaemonContext(log: configuration.log)
            var serviceConfiguration = BasdServices.Configuration(
                stateDirectory: configuration.stateDirectory, daemonVersion: configuration.daemonVersion)
            serviceConfiguration.runnerPath = configuration.runnerPath
            serviceConfiguration.engine.verbose = configuration.traceTransfers
            serviceConfiguration.appDiscoveryFolders =
                configuration.appDiscoveryFolders ?? AppDiscovery.folders(ProcessInfo.processInfo.environment)
            serviceConfiguration.desktopBuses = configuration.desktopBuses ?? .fromEnvironment()
            if serviceConfiguration.desktopBuses == .none { configuration.log("desktop: D-Bus integration is off") }
            let service = BasdServices(
                store: store, configuration: serviceConfiguration, settings: settings, log: configuration.log,
                connectionCount: { context.connectionCount })
            service.start()
            let channel: any Channel
            do throws(DaemonError) {
                channel = try await listen(configuration, context: context, service: service)
            } catch {
                service.shutdown()
                try? store.close()
                throw error
            }
            let settingsExist = (try? FileStatus.of(settingsPath).get()) != nil
            let trust = DownloadRequest.Trust(
                caFile: settings.settings.caFile, pinnedPublicKey: settings.settings.pinnedPublicKey,
                caDirectory: settings.settings.caDirectory)
            configuration.log(
                StartupLine(
                    version: configuration.daemonVersion, stateDirectory: configuration.stateDirectory,
                    socketPath: configuration.socketPath, isSocketActivated: configuration.activatedSocket != nil,
                    settingsPath: settingsPath, settingsExist: settingsExist,
                    trust: trust.source(system: DownloadRequest.Trust.systemDefaults())
                ).text)
            return DaemonServer(
                configuration: configuration, lock: lock, context: context, service: service, channel: channel)
        } catch {
            try? lock.release()
            throw error
        }
    }

    private static func listen(
        _ configuration: Configuration, context: DaemonContext, service: BasdServices
    )
        async throws(DaemonError) -> any Channel
    {
        let socketPath = configuration.socketPath
        let daemonUID = getuid()
        // Every connection on the executor's own loop: requests are served where they are read.
        let bootstrap = ServerBootstrap(group: service.executor.group)
            .serverChannelOption(.backlog, value: 128)
            // A client that half-closes still gets the replies to what it sent (see ConnectionHandler).
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                // Counted from the moment it is accepted, on the loop that accepts it (the idle
                // exit looks at the count on that loop too).
                guard context.register(channel) else {
                    channel.close(promise: nil)  // accepted while shutting down
                    return channel.eventLoop.makeSucceededVoidFuture()
                }
                return PeerCredentials.of(channel).flatMapThrowing { peer in
                    guard PeerCredentials.isAllowed(peerUID: peer.uid, daemonUID: daemonUID) else {
                        context.log(
                            "refused a connection from uid \(peer.uid) (pid \(peer.pid)); basd serves uid \(daemonUID) only"
                        )
                        channel.close(promise: nil)
                        return
                    }
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(
                        ConnectionHandler(session: Session(channel: channel, services: service)))
                }
            }
        if let activated = configuration.activatedSocket {
            do {
                // NIO takes the descriptor over (non-blocking, listen again with its backlog) and
                // closes it with the channel; systemd keeps its own copy, so the socket lives on.
                return try await bootstrap.withBoundSocket(activated.fileDescriptor).get()
            } catch {
                throw DaemonError(
                    .socket, "cannot serve on the socket-activated fd \(activated.fileDescriptor) (\(socketPath))",
                    cause: error)
            }
        }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(unixDomainSocketPath: socketPath).get()
        } catch {
            throw DaemonError(.socket, "cannot listen on \(socketPath)", cause: error)
        }
        // The folder is 0700, so no other user could connect in the moment before this chmod.
        guard chmod(socketPath, 0o600) == 0 else {
            let code = errno
            try? await channel.close()
            unlink(socketPath)
            throw DaemonError(.socket, "chmod 0600 of \(socketPath) failed: \(String(cString: strerror(code)))")
        }
        return channel
    }

    /// Serves until ``shutdown()``, then closes every connection, removes the socket file (not an
    /// activated socket's: systemd owns that one), closes the store and releases the lock.
    package func run() async throws {
        try? await channel.closeFuture.get()
        if let idleMonitor { service.executor.async { idleMonitor.stop() } }
        await context.closeAll()
        // Blocking waits (engine thread, service queue): on a thread of their own, not the pool.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread { [service] in
                service.shutdown()
                done.resume()
            }.start()
        }
        if configuration.activatedSocket == nil { unlink(configuration.socketPath) }
        var failure: (any Error)?
        do { try service.store.close() } catch { failure = error }
        try? lock.release()
        if let failure { throw DaemonError(.store, "closing basd's state failed", cause: failure as? BAStoreError) }
    }

    /// Stops accepting connections; ``run()`` then finishes the shutdown. Safe to call more than once.
    package func shutdown() async {
        try? await channel.close()
    }

    /// Open client connections.
    package var connectionCount: Int { context.connectionCount }
}
