import BACore
import BADownloadEngine
import Foundation

// Servers that give no answer (executor): the engine's ``ServerGate`` holds their failed
// transfers; listings, packs and the log say so.
extension TransferCoordinator {
    /// A server that gives no answer, as the engine last said.
    struct ServerWait: Sendable, Equatable {
        /// The last failure (`http://…: Couldn't connect to server`).
        var reason: String
        /// When the engine next tries it (one transfer: the others wait for its answer).
        var nextAttemptAt: Date
        /// Since when it gives no answer.
        var since: Date
        /// How many transfers wait for it.
        var waiting: Int
    }

    /// The engine says `server` gives no answer (the first time, or after a failed try).
    func serverWaiting(_ server: String, reason: String, nextProbeIn: Duration, waiting: Int) {
        let now = clock.now
        let previous = serverWaits[server]
        let wait = ServerWait(
            reason: reason, nextAttemptAt: now.addingTimeInterval(Self.seconds(nextProbeIn)),
            since: previous?.since ?? now, waiting: waiting)
        serverWaits[server] = wait
        if previous == nil {
            log(
                "server \(server) gives no answer (\(reason)): \(waiting) transfer(s) wait for it, tried one at a time; next try in \(LogDuration.text(nextProbeIn))"
            )
        }
        delegate?.transfers(self, server: server, waiting: wait)
    }

    /// The engine says `server` answered (or the network changed): its transfers go on.
    func serverAnswered(_ server: String, released: Int, downFor: Duration) {
        guard serverWaits.removeValue(forKey: server) != nil else { return }
        log("server \(server) answers again after \(LogDuration.text(downFor)): \(released) transfer(s) go on")
        delegate?.transfers(self, server: server, waiting: nil)
    }

    /// Whether the server of `url` gives no answer now, and since when, why and the next try.
    func serverWait(of url: String) -> ServerWait? {
        guard !serverWaits.isEmpty, let key = ServerGate.key(of: url) else { return nil }
        return serverWaits[key]
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
