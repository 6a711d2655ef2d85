import Foundation

/// One entry of an app's event log: one row of the `event` table.
///
/// The log is what basd owes the app (its delegate) or its extension. An event is appended in the
/// same transaction as the download change it reports, so neither exists without the other; it
/// stays *undelivered* until the receiver acknowledges it with ``BAStore/markDelivered(app:through:)``.
/// Delivery is at least once and in ``sequence`` order per app; a receiver drops a sequence it
/// has already seen (see `docs/state.md`).
public struct StoredEvent: Sendable, Hashable {
    /// What happened to the download.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A transfer started (`downloadDidBegin`). Payload: `offset`, `isForeground`.
        case began
        /// A transfer stopped keeping its bytes (`downloadDidPause`). Payload: `bytesOnDisk`.
        case paused
        /// Bytes arrived (`download(_:didWriteBytes:…)`). Payload: `bytesWritten`, `totalBytes`
        /// (absent when unknown). Only the latest undelivered one per download is kept.
        case progress
        /// The file is complete (`finishedWithFileURL`). Payload: `destination`, `size`, and
        /// `keptForApp` once the extension returned without moving the file (``isKeptForApp``).
        case finished
        /// The download failed (`failedWithError`). Payload: `domain`, `code`, `message`.
        case failed
        /// The server asked for credentials (`download(_:didReceive:)`). Payload: `challenge`.
        case needsCredentials
    }

    /// The event's place in the log: increasing, never reused (also after pruning), global
    /// across apps, so one app's events in sequence order are in the order they happened.
    public var sequence: Int64
    /// The bundle identifier of the app the event is for.
    public var appIdentifier: String
    /// The download it is about.
    public var downloadUniqueIdentifier: String
    /// What happened.
    public var kind: Kind
    /// The details, a JSON object (keys per ``Kind``).
    public var payload: String
    /// When it was appended.
    public var createdAt: Date
    /// When the receiver acknowledged it; nil while undelivered.
    public var deliveredAt: Date?

    /// Creates an event value (the store creates the stored ones).
    public init(
        sequence: Int64, appIdentifier: String, downloadUniqueIdentifier: String, kind: Kind, payload: String,
        createdAt: Date, deliveredAt: Date? = nil
    ) {
        self.sequence = sequence
        self.appIdentifier = appIdentifier
        self.downloadUniqueIdentifier = downloadUniqueIdentifier
        self.kind = kind
        self.payload = payload
        self.createdAt = createdAt
        self.deliveredAt = deliveredAt
    }

    /// The payload key of ``isKeptForApp``.
    public static let keptForAppKey = "keptForApp"

    /// The event is kept for the app (``BAStore/keepForApp(sequence:)``): its extension returned
    /// from the call without moving the finished file, so the event goes to the app's next
    /// connection and never to the extension again.
    public var isKeptForApp: Bool {
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any] else {
            return false
        }
        return object[Self.keptForAppKey] as? Bool == true
    }
}
