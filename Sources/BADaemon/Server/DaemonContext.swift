import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// The open connections, closed together at shutdown.
final class DaemonContext: Sendable {
    let log: @Sendable (String) -> Void
    private let connections = NIOLockedValueBox<Connections>(Connections())

    private struct Connections {
        var open: [ObjectIdentifier: any Channel] = [:]
        var closed = false
    }

    init(log: @escaping @Sendable (String) -> Void) {
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
}
