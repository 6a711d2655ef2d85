import BACore
import Foundation
internal import GRDB

// What the download engine reports, recorded: each call changes the download and appends the
// event the app must hear about in one transaction, so after a crash both or neither are there.

extension BAStore {
    /// Records that a transfer started: state downloading, one more attempt, `offset` bytes kept
    /// on disk. Appends a `began` event.
    ///
    /// - Parameters:
    ///   - offset: Bytes already on disk, kept (0 for a fresh start).
    ///   - isForeground: Whether it runs in the foreground.
    ///   - partialPath: Where the partial file is; nil leaves it unchanged.
    /// - Returns: The appended event.
    /// - Throws: ``BAStoreError/Code/unknownDownload``, ``BAStoreError/Code/downloadEnded``.
    @discardableResult
    package func recordBegan(
        uniqueIdentifier: String, offset: Int64, isForeground: Bool, partialPath: String? = nil
    )
        throws(BAStoreError) -> StoredEvent
    {
        try transition(uniqueIdentifier, "recording the start of") { db, download, now in
            try db.executeCached(
                sql: """
                    UPDATE download SET state = 2, bytes_on_disk = ?, foreground = ?, attempts = attempts + 1,
                        partial_path = coalesce(?, partial_path), updated_at = ?
                    WHERE unique_identifier = ?
                    """, arguments: [offset, isForeground, partialPath, StoreTime(now), uniqueIdentifier])
            return try appendEvent(
                db, download, .began(offset: offset, isForeground: isForeground), now)
        }
    }

    /// Records that a transfer started its next attempt after a retry wait: as ``recordBegan(uniqueIdentifier:offset:isForeground:partialPath:)``
    /// (state downloading, one more attempt, `offset` bytes kept) but with no event: the app heard
    /// `began` when the download began, and a retry is not a new beginning (Apple's delegate has
    /// no callback for it; `ba events` shows the wait as a transient `waiting` event instead).
    ///
    /// - Throws: ``BAStoreError/Code/unknownDownload``, ``BAStoreError/Code/downloadEnded``.
    package func recordRetryAttempt(uniqueIdentifier: String, offset: Int64, isForeground: Bool) throws(BAStoreError) {
        try transition(uniqueIdentifier, "recording the next attempt of") { db, download, now in
            try db.executeCached(
                sql: """
                    UPDATE download SET state = 2, bytes_on_disk = ?, foreground = ?, attempts = attempts + 1,
                        updated_at = ?
                    WHERE unique_identifier = ?
                    """, arguments: [offset, isForeground, StoreTime(now), uniqueIdentifier])
        }
    }

    /// Records that a transfer stopped keeping `bytesOnDisk` bytes (before a promotion, or
    /// paused): state waiting. Appends a `paused` event.
    ///
    /// - Returns: The appended event.
    /// - Throws: ``BAStoreError/Code/unknownDownload``, ``BAStoreError/Code/downloadEnded``.
    @discardableResult
    package func recordPaused(uniqueIdentifier: String, bytesOnDisk: Int64) throws(BAStoreError) -> StoredEvent {
        try transition(uniqueIdentifier, "recording the pause of") { db, download, now in
            try db.executeCached(
                sql: "UPDATE download SET state = 1, bytes_on_disk = ?, updated_at = ? WHERE unique_identifier = ?",
                arguments: [bytesOnDisk, StoreTime(now), uniqueIdentifier])
            return try appendEvent(db, download, .paused(bytesOnDisk: bytesOnDisk), now)
        }
    }

    /// Records how far a transfer got: the bytes of the partial file and the validator they belong
    /// to, which a restarted basd needs to resume. Appends a `progress` event and drops the
    /// download's older undelivered `progress` events (each one carries the running total, so
    /// only the latest matters, and the log stays small).
    ///
    /// Each call is a commit with an fsync: record progress at a bounded rate (when the validator
    /// changes and every few MiB or seconds), not for every chunk.
    ///
    /// - Parameters:
    ///   - bytesOnDisk: Bytes of the partial file now on disk.
    ///   - totalBytes: The file's size, if known.
    ///   - validator: The response's validator (strong ETag, else Last-Modified); nil leaves the
    ///     stored one unchanged.
    /// - Returns: The appended event.
    /// - Throws: ``BAStoreError/Code/unknownDownload``, ``BAStoreError/Code/downloadEnded``.
    @discardableResult
    package func recordProgress(
        uniqueIdentifier: String, bytesOnDisk: Int64, totalBytes: Int64? = nil, validator: String? = nil
    ) throws(BAStoreError) -> StoredEvent {
        try transition(uniqueIdentifier, "recording the progress of") { db, download, now in
            try db.executeCached(
                sql: """
                    UPDATE download SET bytes_on_disk = ?, validator = coalesce(?, validator), updated_at = ?
                    WHERE unique_identifier = ?
                    """, arguments: [bytesOnDisk, validator, StoreTime(now), uniqueIdentifier])
            try db.executeCached(
                sql: """
                    DELETE FROM event
                    WHERE download_id = ? AND kind = 'progress' AND delivered_at IS NULL
                    """, arguments: [uniqueIdentifier])
            return try appendEvent(
                db, download, .progress(bytesWritten: bytesOnDisk, totalBytes: totalBytes), now)
        }
    }

    /// Records that the server asked for credentials. Appends a `needsCredentials` event.
    ///
    /// - Parameter challenge: The server's challenge (its `WWW-Authenticate`), for the receiver.
    /// - Returns: The appended event.
    /// - Throws: ``BAStoreError/Code/unknownDownload``, ``BAStoreError/Code/downloadEnded``.
    @discardableResult
    package func recordNeedsCredentials(
        uniqueIdentifier: String, challenge: String
    ) throws(BAStoreError)
        -> StoredEvent
    {
        try transition(uniqueIdentifier, "recording a credential request of") { db, download, now in
            try db.executeCached(
                sql: "UPDATE download SET updated_at = ? WHERE unique_identifier = ?",
                arguments: [StoreTime(now), uniqueIdentifier])
            return try appendEvent(
                db, download, .needsCredentials(challenge: challenge), now)
        }
    }

    /// Records that the file is complete and verified at `destination`: state finished. Appends
    /// a `finished` event. The download ends: it changes no more, and its identifier may be
    /// scheduled again.
    ///
    /// - Parameters:
    ///   - destination: Where the finished file is.
    ///   - size: The file's size; nil keeps the recorded bytes on disk.
    /// - Returns: The appended event.
    /// - Throws: ``BAStoreError/Code/unknownDownload``, ``BAStoreError/Code/downloadEnded`` (so a
    ///   download never finishes twice).
    @discardableResult
    package func markFinished(
        uniqueIdentifier: String, destination: String, size: Int64? = nil
    )
        throws(BAStoreError) -> StoredEvent
    {
        try transition(uniqueIdentifier, "recording the end of") { db, download, now in
            let size = size ?? download.bytesOnDisk
            try db.executeCached(
                sql: """
                    UPDATE download SET state = 3, destination_path = ?, bytes_on_disk = ?, updated_at = ?
                    WHERE unique_identifier = ?
                    """, arguments: [destination, size, StoreTime(now), uniqueIdentifier])
            return try appendEvent(
                db, download, .finished(destination: destination, size: size), now)
        }
    }

    /// Records that the download failed for good: state failed, `error` kept as its last error.
    /// Appends a `failed` event. The download ends: it changes no more, and its identifier may be
    /// scheduled again.
    ///
    /// - Returns: The appended event.
    /// - Throws: ``BAStoreError/Code/unknownDownload``, ``BAStoreError/Code/downloadEnded``.
    @discardableResult
    package func markFailed(
        uniqueIdentifier: String, error: StoredDownload.Failure
    ) throws(BAStoreError)
        -> StoredEvent
    {
        try transition(uniqueIdentifier, "recording the failure of") { db, download, now in
            try db.executeCached(
                sql: """
                    UPDATE download SET state = -1, error_domain = ?, error_code = ?, error_message = ?,
                        updated_at = ?
                    WHERE unique_identifier = ?
                    """, arguments: [error.domain, error.code, error.message, StoreTime(now), uniqueIdentifier])
            return try appendEvent(
                db, download, .failed(domain: error.domain, code: error.code, message: error.message), now)
        }
    }

    /// Runs `body` in one transaction on the active download `uniqueIdentifier`.
    private func transition<T>(
        _ uniqueIdentifier: String, _ doing: String, _ body: (Database, StoredDownload, Date) throws -> T
    ) throws(BAStoreError) -> T {
        let now = self.now
        return try write("\(doing) download \(uniqueIdentifier)") { db in
            guard let download = try Self.fetchDownload(db, uniqueIdentifier) else {
                throw BAStoreError(
                    .unknownDownload, "no download has unique identifier \(uniqueIdentifier) (cancelled?)",
                    path: path)
            }
            guard download.state.isActive else {
                throw BAStoreError(
                    .downloadEnded,
                    "download \(uniqueIdentifier) (\"\(download.identifier)\" of \(download.appIdentifier)) has "
                        + "already \(download.state); it changes no more", path: path)
            }
            return try body(db, download, now)
        }
    }

    /// Appends one event for `download` (inside the caller's transaction).
    private func appendEvent(
        _ db: Database, _ download: StoredDownload, _ change: DownloadChange, _ now: Date
    ) throws -> StoredEvent {
        try db.executeCached(
            sql: """
                INSERT INTO event (app_id, download_id, kind, payload, created_at) VALUES (?, ?, ?, ?, ?)
                """,
            arguments: [
                download.appIdentifier, download.uniqueIdentifier, change.kind.rawValue, EventPayload.json(change),
                StoreTime(now),
            ])
        var event = StoredEvent(
            sequence: db.lastInsertedRowID, appIdentifier: download.appIdentifier,
            downloadUniqueIdentifier: download.uniqueIdentifier, change: change, createdAt: now)
        event.download = download
        return event
    }
}

/// The `payload` column of an event: a JSON object of its change's fields (the kind is the
/// `kind` column), keys sorted: `{"isForeground":false,"offset":0}` for a `began`.
enum EventPayload {
    /// The payload of `change`, written directly (an event is appended per transfer change, on
    /// basd's executor: Foundation's encoder was a tenth of a small download's cost), byte for
    /// byte what `JSONEncoder` with sorted keys and unescaped slashes writes.
    static func json(_ change: DownloadChange) -> String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        func key(_ name: String) {
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            JSONText.appendString(name, to: &out, escapingSlashes: false)
            out.append(UInt8(ascii: ":"))
        }
        func integer(_ name: String, _ value: Int64) {
            key(name)
            JSONText.appendInteger(value, to: &out)
        }
        func string(_ name: String, _ value: String) {
            key(name)
            JSONText.appendString(value, to: &out, escapingSlashes: false)
        }
        switch change {
        case .began(let offset, let isForeground):
            key("isForeground")
            out += Array((isForeground ? "true" : "false").utf8)
            integer("offset", offset)
        case .paused(let bytesOnDisk):
            integer("bytesOnDisk", bytesOnDisk)
        case .progress(let bytesWritten, let totalBytes):
            integer("bytesWritten", bytesWritten)
            if let totalBytes { integer("totalBytes", totalBytes) }
        case .finished(let destination, let size):
            string("destination", destination)
            integer("size", size)
        case .failed(let domain, let code, let message):
            integer("code", Int64(code))
            string("domain", domain)
            string("message", message)
        case .needsCredentials(let challenge):
            string("challenge", challenge)
        case .waiting(let reason, let retryAt, let attempt):
            // Never stored (transient, for CLI observers); encoded like the protocol for completeness.
            integer("attempt", Int64(attempt))
            string("reason", reason)
            integer("retryAt", retryAt)
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The change a row's `kind` and `payload` hold.
    static func decode(kind: DownloadChange.Kind, payload: String) throws -> DownloadChange {
        let decoder = JSONDecoder()
        decoder.userInfo[Fields.kindKey] = kind
        return try decoder.decode(Fields.self, from: Data(payload.utf8)).change
    }

    private struct Fields: Decodable {
        static let kindKey = CodingUserInfoKey(rawValue: "kind")!
        var change: DownloadChange
        init(from decoder: any Decoder) throws {
            guard let kind = decoder.userInfo[Self.kindKey] as? DownloadChange.Kind else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "no kind"))
            }
            change = try DownloadChange(kind: kind, from: decoder)
        }
    }
}
