import BADaemonProtocol
import BAStore
import Foundation

/// The fields of a stored event's payload (each kind sets its own; `StoredEvent.Kind` lists them).
struct EventDetails: Decodable {
    var offset: Int64?
    var isForeground: Bool?
    var bytesOnDisk: Int64?
    var bytesWritten: Int64?
    var totalBytes: Int64?
    var destination: String?
    var size: Int64?
    var domain: String?
    var code: Int?
    var message: String?
    var challenge: String?

    /// The details of `event`; an unreadable payload (never written by this basd) has none.
    init(_ event: StoredEvent) {
        self = (try? JSONDecoder().decode(EventDetails.self, from: Data(event.payload.utf8))) ?? EventDetails()
    }

    private init() {}
}

extension EventRouter {
    /// A stored event as the protocol sends it: to the app (with its download) or to a CLI
    /// observer (with the app's bundle identifier).
    func wireEvent(_ event: StoredEvent, forApp: Bool) throws -> WireEvent {
        let download = try store.download(uniqueIdentifier: event.downloadUniqueIdentifier)
        let kind = WireEvent.Kind(rawValue: event.kind.rawValue) ?? .progress
        var wire = WireEvent(
            sequence: event.sequence, downloadUniqueIdentifier: event.downloadUniqueIdentifier,
            identifier: download?.identifier ?? "", kind: kind)
        let details = EventDetails(event)
        wire.offset = details.offset
        wire.isForeground = details.isForeground
        wire.bytesOnDisk = details.bytesOnDisk
        wire.bytesWritten = details.bytesWritten
        wire.totalBytes = details.totalBytes
        wire.destination = details.destination
        wire.size = details.size
        wire.errorDomain = details.domain
        wire.errorCode = details.code
        wire.errorMessage = details.message
        wire.challenge = details.challenge
        wire.parked = event.parkedReason
        if forApp {
            wire.download = download.map(DownloadPayload.init)
        } else {
            wire.appIdentifier = event.appIdentifier
        }
        return wire
    }
}
