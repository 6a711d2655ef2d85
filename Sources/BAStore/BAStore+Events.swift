import Foundation
internal import GRDB

extension BAStore {
    /// The app's undelivered events after sequence `after`, in sequence order: what to send it
    /// (or its extension) next.
    ///
    /// Delivery is at least once: an event stays here until ``markDelivered(app:through:includingParked:)``,
    /// so one sent before a crash is sent again after it. Receivers drop a sequence they have seen.
    ///
    /// - Parameters:
    ///   - bundleIdentifier: The app.
    ///   - after: Only events with a greater sequence (0 for all): a sender that has events in
    ///     flight asks for those after the last one it sent.
    ///   - limit: At most this many.
    ///   - includingParked: Whether parked events count (the app's view: they are its to handle);
    ///     false for the extension's view, which goes past them.
    package func undeliveredEvents(
        app bundleIdentifier: String, after: Int64 = 0, limit: Int = 100, includingParked: Bool = true
    )
        throws(BAStoreError) -> [StoredEvent]
    {
        try read("reading the undelivered events of \(bundleIdentifier)") { db in
            try Row.fetchAllCached(
                db,
                sql: """
                    SELECT \(StoredEvent.columns) FROM event
                    WHERE app_id = ? AND delivered_at IS NULL AND sequence > ?
                        \(includingParked ? "" : "AND parked_at IS NULL")
                    ORDER BY sequence LIMIT ?
                    """, arguments: [bundleIdentifier, after, max(0, limit)]
            ).map(StoredEvent.init(row:))
        }
    }

    /// Acknowledges the app's events up to and including `sequence`: they are no longer
    /// undelivered. Idempotent: acknowledging again, or an older sequence, changes nothing.
    ///
    /// - Parameters:
    ///   - includingParked: Whether parked events among them are acknowledged too: true for the
    ///     app (it was sent them), false for the extension (it was not).
    /// - Returns: How many events this call marked delivered.
    @discardableResult
    package func markDelivered(
        app bundleIdentifier: String, through sequence: Int64, includingParked: Bool = true
    ) throws(BAStoreError) -> Int {
        let now = self.now
        return try write("acknowledging the events of \(bundleIdentifier)") { db in
            try db.executeCached(
                sql: """
                    UPDATE event SET delivered_at = ?
                    WHERE app_id = ? AND sequence <= ? AND delivered_at IS NULL
                        \(includingParked ? "" : "AND parked_at IS NULL")
                    """, arguments: [StoreTime(now), bundleIdentifier, sequence])
            return db.changesCount
        }
    }

    /// The app acknowledges its events through `sequence` (parked ones too): they are marked
    /// delivered in one transaction, and the `finished` events among them are returned, so the
    /// caller can remove the files the app left in place. Reads only those events, not every one
    /// acknowledged.
    package func acknowledge(
        app bundleIdentifier: String, through sequence: Int64
    ) throws(BAStoreError)
        -> [StoredEvent]
    {
        let now = self.now
        return try write("acknowledging the events of \(bundleIdentifier)") { db in
            let finished = try Row.fetchAllCached(
                db,
                sql: """
                    SELECT \(StoredEvent.columns) FROM event
                    WHERE app_id = ? AND delivered_at IS NULL AND sequence <= ? AND kind = 'finished'
                    ORDER BY sequence
                    """, arguments: [bundleIdentifier, sequence]
            ).map(StoredEvent.init(row:))
            try db.executeCached(
                sql: "UPDATE event SET delivered_at = ? WHERE app_id = ? AND sequence <= ? AND delivered_at IS NULL",
                arguments: [StoreTime(now), bundleIdentifier, sequence])
            return finished
        }
    }

    /// Parks the app's undelivered event `sequence`: it stays owed to the app (its next
    /// connection is sent it), but the extension's view of the app's events goes past it. A
    /// delivered or already parked event is left as it is.
    ///
    /// - Parameter reason: Why, as listings show it.
    /// - Returns: Whether the event was parked by this call.
    @discardableResult
    package func parkEvent(app bundleIdentifier: String, sequence: Int64, reason: String) throws(BAStoreError) -> Bool {
        let now = self.now
        return try write("parking event \(sequence) of \(bundleIdentifier)") { db in
            try db.executeCached(
                sql: """
                    UPDATE event SET parked_at = ?, parked_reason = ?
                    WHERE app_id = ? AND sequence = ? AND delivered_at IS NULL AND parked_at IS NULL
                    """, arguments: [StoreTime(now), reason, bundleIdentifier, sequence])
            return db.changesCount == 1
        }
    }

    /// The event with this sequence, delivered or not; nil when there is none (never appended,
    /// or pruned).
    package func event(sequence: Int64) throws(BAStoreError) -> StoredEvent? {
        try read("reading event \(sequence)") { db in
            try Row.fetchOneCached(
                db, sql: "SELECT \(StoredEvent.columns) FROM event WHERE sequence = ?", arguments: [sequence]
            ).map(StoredEvent.init(row:))
        }
    }

    /// The parked, undelivered events of these downloads, by download (for listings).
    package func parkedEvents(downloads uniqueIdentifiers: [String]) throws(BAStoreError) -> [String: [StoredEvent]] {
        guard !uniqueIdentifiers.isEmpty else { return [:] }
        let list = String(decoding: (try? JSONEncoder().encode(uniqueIdentifiers)) ?? Data("[]".utf8), as: UTF8.self)
        return try read("reading parked events") { db in
            let events = try Row.fetchAllCached(
                db,
                sql: """
                    SELECT \(StoredEvent.columns) FROM event
                    WHERE parked_at IS NOT NULL AND delivered_at IS NULL
                        AND download_id IN (SELECT value FROM json_each(?))
                    ORDER BY sequence
                    """, arguments: [list]
            ).map(StoredEvent.init(row:))
            return Dictionary(grouping: events, by: \.downloadUniqueIdentifier)
        }
    }

    /// Deletes ended (finished or failed) downloads last changed before `date`, with their
    /// delivered events; one with an event still undelivered, or a finished file still tracked
    /// for purging, stays.
    ///
    /// - Returns: How many downloads were deleted.
    @discardableResult
    package func pruneEndedDownloads(olderThan date: Date) throws(BAStoreError) -> Int {
        try write("pruning ended downloads") { db in
            try db.executeCached(
                sql: """
                    DELETE FROM download
                    WHERE state IN (-1, 3) AND updated_at < ?
                        AND NOT EXISTS (SELECT 1 FROM event
                                        WHERE event.download_id = download.unique_identifier AND delivered_at IS NULL)
                        AND NOT EXISTS (SELECT 1 FROM asset WHERE asset.download_id = download.unique_identifier)
                    """, arguments: [StoreTime(date)])
            return db.changesCount
        }
    }

    /// Deletes delivered events acknowledged before `date`. Undelivered events are never pruned.
    ///
    /// - Returns: How many events were deleted.
    @discardableResult
    package func pruneDeliveredEvents(olderThan date: Date) throws(BAStoreError) -> Int {
        try write("pruning delivered events") { db in
            try db.executeCached(
                sql: "DELETE FROM event WHERE delivered_at IS NOT NULL AND delivered_at < ?",
                arguments: [StoreTime(date)])
            return db.changesCount
        }
    }
}
