import BACore
import Foundation

/// One entry of an app's event log: one row of the `event` table.
///
/// The log is what basd owes the app (its delegate) or its extension. An event is appended in the
/// same transaction as the download change it reports, so neither exists without the other; it
/// stays *undelivered* until the receiver acknowledges it with ``BAStore/markDelivered(app:through:includingParked:)``.
/// Delivery is at least once and in ``sequence`` order per app; a receiver drops a sequence it
/// has already seen (see `docs/state.md`).
package struct StoredEvent: Sendable, Hashable {
    /// What happened to the download, by name (the `kind` column).
    package typealias Kind = DownloadChange.Kind

    /// The event's place in the log: increasing, never reused (also after pruning), global
    /// across apps, so one app's events in sequence order are in the order they happened.
    package var sequence: Int64
    /// The bundle identifier of the app the event is for.
    package var appIdentifier: String
    /// The download it is about.
    package var downloadUniqueIdentifier: String
    /// What happened (the `kind` column, and the `payload` column's JSON object of its fields).
    /// Only the latest undelivered `progress` per download is kept.
    package var change: DownloadChange
    /// When it was appended.
    package var createdAt: Date
    /// When the receiver acknowledged it; nil while undelivered.
    package var deliveredAt: Date?
    /// When it was parked: the app's extension failed on it too often, so it waits for the app
    /// alone and the extension is handed the app's later events past it. Nil when not parked.
    package var parkedAt: Date?
    /// Why it was parked (which failures, how many), for listings.
    package var parkedReason: String?

    /// The download as the change found it, on an event the store just appended (its description
    /// and app, so that whoever routes the event needs no read of it); nil on events read back.
    /// Not part of the event's identity (`==`, `hash`).
    package var download: StoredDownload?

    /// What happened, by name.
    package var kind: Kind { change.kind }

    package static func == (left: StoredEvent, right: StoredEvent) -> Bool {
        left.sequence == right.sequence && left.appIdentifier == right.appIdentifier
            && left.downloadUniqueIdentifier == right.downloadUniqueIdentifier && left.change == right.change
            && left.createdAt == right.createdAt && left.deliveredAt == right.deliveredAt
            && left.parkedAt == right.parkedAt && left.parkedReason == right.parkedReason
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(sequence)
        hasher.combine(change)
    }

    /// Creates an event value (the store creates the stored ones).
    package init(
        sequence: Int64, appIdentifier: String, downloadUniqueIdentifier: String, change: DownloadChange,
        createdAt: Date, deliveredAt: Date? = nil, parkedAt: Date? = nil, parkedReason: String? = nil
    ) {
        self.sequence = sequence
        self.appIdentifier = appIdentifier
        self.downloadUniqueIdentifier = downloadUniqueIdentifier
        self.change = change
        self.createdAt = createdAt
        self.deliveredAt = deliveredAt
        self.parkedAt = parkedAt
        self.parkedReason = parkedReason
    }
}
