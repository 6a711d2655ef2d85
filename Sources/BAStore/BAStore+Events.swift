import Foundation
internal import GRDB

extension BAStore {
    /// The app's undelivered events after sequence `after`, in sequence order: what to send it
    /// (or its extension) next.
    ///
    /// Delivery is at least once: an event stays here until ``markDelivered(app:through:)``, so
    /// one sent before a crash is sent again after it. Receivers drop a sequence they have seen.
    ///
    /// - Parameters:
    ///   - bundleIdentifier: The app.
    ///   - after: Only events with a greater sequence (0 for all): a sender that has events in
    ///     flight asks for those after the last one it sent.
    ///   - limit: At most this many.
    public func undeliveredEvents(
        app bundleIdentifier: String, after: Int64 = 0, limit: Int = 100
    )
        throws(BAStoreError) -> [StoredEvent]
    {
        try read("reading the undelivered events of \(bundleIdentifier)") { db in
            try Row.fetchAllCached(
                db,
                sql: """
                    SELECT \(StoredEvent.columns) FROM event
                    WHERE app_id = ? AND delivered_at IS NULL AND sequence > ?
                    ORDER BY sequence LIMIT ?
                    """, arguments: [bundleIdentifier, after, max(0, limit)]
            ).map(StoredEvent.init(row:))
        }
    }

    /// Acknowledges the app's events up to and including `sequence`: they are no longer
    /// undelivered. Idempotent: acknowledging again, or an older sequence, changes nothing.
    ///
    /// - Parameters:
    ///   - bundleIdentifier: The app.
    ///   - sequence: The last event acknowledged.
    ///   - keepingForApp: Leave the events kept for the app (``keepForApp(sequence:)``)
    ///     undelivered: the extension's side acknowledges with true, the app's with false.
    /// - Returns: How many events this call marked delivered.
    @discardableResult
    public func markDelivered(
        app bundleIdentifier: String, through sequence: Int64, keepingForApp: Bool = false
    ) throws(BAStoreError) -> Int {
        let now = self.now
        return try write("acknowledging the events of \(bundleIdentifier)") { db in
            try db.executeCached(
                sql: """
                    UPDATE event SET delivered_at = ?
                    WHERE app_id = ? AND sequence <= ? AND delivered_at IS NULL
                        AND NOT (? AND coalesce(json_extract(payload, '$.\(StoredEvent.keptForAppKey)'), 0))
                    """, arguments: [now, bundleIdentifier, sequence, keepingForApp])
            return db.changesCount
        }
    }

    /// Keeps the undelivered event `sequence` for the app: it goes to the app's connections and
    /// not to its extension again (``StoredEvent/isKeptForApp``), and only the app's
    /// acknowledgement delivers it. What basd does with a finished file the extension did not
    /// move.
    public func keepForApp(sequence: Int64) throws(BAStoreError) {
        try write("keeping event \(sequence) for the app") { db in
            try db.executeCached(
                sql: """
                    UPDATE event SET payload = json_set(payload, '$.\(StoredEvent.keptForAppKey)', json('true'))
                    WHERE sequence = ? AND delivered_at IS NULL
                    """, arguments: [sequence])
        }
    }

    /// Deletes ended (finished or failed) downloads last changed before `date`, with their
    /// delivered events; one with an event still undelivered, or a finished file still tracked
    /// for purging, stays.
    ///
    /// - Returns: How many downloads were deleted.
    @discardableResult
    public func pruneEndedDownloads(olderThan date: Date) throws(BAStoreError) -> Int {
        try write("pruning ended downloads") { db in
            try db.executeCached(
                sql: """
                    DELETE FROM download
                    WHERE state IN (-1, 3) AND updated_at < ?
                        AND NOT EXISTS (SELECT 1 FROM event
                                        WHERE event.download_id = download.unique_identifier AND delivered_at IS NULL)
                        AND NOT EXISTS (SELECT 1 FROM asset WHERE asset.download_id = download.unique_identifier)
                    """, arguments: [date])
            return db.changesCount
        }
    }

    /// Deletes delivered events acknowledged before `date`. Undelivered events are never pruned.
    ///
    /// - Returns: How many events were deleted.
    @discardableResult
    public func pruneDeliveredEvents(olderThan date: Date) throws(BAStoreError) -> Int {
        try write("pruning delivered events") { db in
            try db.executeCached(
                sql: "DELETE FROM event WHERE delivered_at IS NOT NULL AND delivered_at < ?", arguments: [date])
            return db.changesCount
        }
    }
}
