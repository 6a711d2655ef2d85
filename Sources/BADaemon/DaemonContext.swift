import BADaemonProtocol
import BAStore
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// What every connection shares: the store, the start time, the open connections, the log.
final class DaemonContext: Sendable {
    let store: BAStore
    let daemonVersion: String
    let started: ContinuousClock.Instant
    let log: @Sendable (String) -> Void
    private let connections = NIOLockedValueBox<Connections>(Connections())

    private struct Connections {
        var open: [ObjectIdentifier: any Channel] = [:]
        var closed = false
    }

    init(store: BAStore, daemonVersion: String, log: @escaping @Sendable (String) -> Void) {
        self.store = store
        self.daemonVersion = daemonVersion
        self.started = .now
        self.log = log
    }

    /// Tracks `channel` until it closes; false when basd is shutting down (close it then).
    func register(_ channel: any Channel) -> Bool {
        let id = ObjectIdentifier(channel)
        let accepted = connections.withLockedValue { state in
            guard !state.closed else { return false }
            state.open[id] = channel
            return true
        }
        if accepted {
            channel.closeFuture.whenComplete { [connections] _ in
                _ = connections.withLockedValue { $0.open.removeValue(forKey: id) }
            }
        }
        return accepted
    }

    var connectionCount: Int { connections.withLockedValue { $0.open.count } }

    /// Refuses new connections and closes the open ones.
    func closeAll() async {
        let open = connections.withLockedValue { state in
            state.closed = true
            return Array(state.open.values)
        }
        for channel in open { try? await channel.close() }
    }

    /// The answer to `status`.
    ///
    /// Reads the store on the calling event loop: two counts on a WAL database, whose readers never
    /// wait for the writer, cost microseconds, and answering inline keeps replies in request order.
    /// The download service, whose store calls write, will run them off the loop.
    func status(protocolVersion: Int) -> ServerMessage.Result {
        do {
            let apps = try store.apps().count
            let active = try store.activeDownloads().count
            let uptime = ContinuousClock.now - started
            let seconds = Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18
            return .status(
                StatusInfo(
                    protocolVersion: protocolVersion, daemonVersion: daemonVersion, pid: getpid(),
                    uptimeSeconds: seconds, connections: connectionCount, registeredApps: apps,
                    activeDownloads: active))
        } catch {
            log("status: reading the store failed: \(error)")
            return .error(
                code: DaemonErrorCode.internalError.rawValue, message: "basd could not read its state: \(error)")
        }
    }
}
