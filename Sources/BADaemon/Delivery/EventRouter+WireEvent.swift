import BADaemonProtocol
import BAStore
import Foundation

extension EventRouter {
    /// A stored event as the protocol sends it: to the app (with its download) or to a CLI
    /// observer (with the app's bundle identifier).
    func wireEvent(_ event: StoredEvent, forApp: Bool) throws -> WireEvent {
        // An event just recorded carries its download; one read back from the log does not.
        let download = try event.download ?? store.download(uniqueIdentifier: event.downloadUniqueIdentifier)
        return WireEvent(
            sequence: event.sequence, downloadUniqueIdentifier: event.downloadUniqueIdentifier,
            identifier: download?.identifier ?? "", change: event.change,
            appIdentifier: forApp ? nil : event.appIdentifier, download: forApp ? download?.download : nil,
            parked: event.parkedReason)
    }
}
