/// What happened to a download: the one event type of the project.
///
/// basd's store appends one to the app's event log in the same transaction as the change it
/// reports (its ``kind`` in the `kind` column, its fields as the JSON `payload`); basd sends it to
/// the app and to `ba events` in the daemon protocol's `event` message, and the app's
/// `BADownloadManager` hands it to its delegate. Its JSON is one object: `kind` and the fields of
/// that kind.
package enum DownloadChange: Sendable, Hashable, Codable {
    /// A transfer started (`downloadDidBegin`); `offset` bytes were already on disk and are kept.
    case began(offset: Int64, isForeground: Bool)
    /// A transfer stopped keeping `bytesOnDisk` bytes (`downloadDidPause`).
    case paused(bytesOnDisk: Int64)
    /// Bytes arrived (`download(_:didWriteBytes:…)`); `totalBytes` is nil when unknown.
    case progress(bytesWritten: Int64, totalBytes: Int64?)
    /// The file is complete at `destination` (`finishedWithFileURL`).
    case finished(destination: String, size: Int64)
    /// The download failed (`failedWithError`): the error's domain, code and message.
    case failed(domain: String, code: Int, message: String)
    /// The server asked for credentials (`download(_:didReceive:)`): the `WWW-Authenticate` value.
    case needsCredentials(challenge: String)
    /// Attempt `attempt` failed for `reason` (e.g. "Couldn't connect to server") and the next one
    /// is due at `retryAt` (Unix time, milliseconds). Transient: never stored, sent only to CLI
    /// observers (`ba events`), never to an app (Apple's delegate has no such callback; the
    /// download stays begun while it waits).
    case waiting(reason: String, retryAt: Int64, attempt: Int)

    /// The kinds of change, by their names in the store and the protocol.
    package enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        case began, paused, progress, finished, failed, needsCredentials, waiting
    }

    /// This change's kind.
    package var kind: Kind {
        switch self {
        case .began: .began
        case .paused: .paused
        case .progress: .progress
        case .finished: .finished
        case .failed: .failed
        case .needsCredentials: .needsCredentials
        case .waiting: .waiting
        }
    }

    private enum CodingKeys: String, CodingKey {
        case kind, offset, isForeground, bytesOnDisk, bytesWritten, totalBytes, destination, size
        case domain, code, message, challenge, reason, retryAt, attempt
    }

    /// Decodes a change from an object with its `kind` and the fields of that kind (other keys
    /// are ignored, so the protocol's event can carry its own beside them).
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(kind: container.decode(Kind.self, forKey: .kind), from: decoder)
    }

    /// Decodes the fields of a change of `kind` (the store keeps the kind in a column of its own).
    package init(kind: Kind, from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch kind {
        case .began:
            self = .began(
                offset: try container.decode(Int64.self, forKey: .offset),
                isForeground: try container.decode(Bool.self, forKey: .isForeground))
        case .paused:
            self = .paused(bytesOnDisk: try container.decode(Int64.self, forKey: .bytesOnDisk))
        case .progress:
            self = .progress(
                bytesWritten: try container.decode(Int64.self, forKey: .bytesWritten),
                totalBytes: try container.decodeIfPresent(Int64.self, forKey: .totalBytes))
        case .finished:
            self = .finished(
                destination: try container.decode(String.self, forKey: .destination),
                size: try container.decode(Int64.self, forKey: .size))
        case .failed:
            self = .failed(
                domain: try container.decode(String.self, forKey: .domain),
                code: try container.decode(Int.self, forKey: .code),
                message: try container.decode(String.self, forKey: .message))
        case .needsCredentials:
            self = .needsCredentials(challenge: try container.decode(String.self, forKey: .challenge))
        case .waiting:
            self = .waiting(
                reason: try container.decode(String.self, forKey: .reason),
                retryAt: try container.decode(Int64.self, forKey: .retryAt),
                attempt: try container.decode(Int.self, forKey: .attempt))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try encodeFields(into: &container)
    }

    private func encodeFields(into container: inout KeyedEncodingContainer<CodingKeys>) throws {
        switch self {
        case .began(let offset, let isForeground):
            try container.encode(offset, forKey: .offset)
            try container.encode(isForeground, forKey: .isForeground)
        case .paused(let bytesOnDisk):
            try container.encode(bytesOnDisk, forKey: .bytesOnDisk)
        case .progress(let bytesWritten, let totalBytes):
            try container.encode(bytesWritten, forKey: .bytesWritten)
            try container.encodeIfPresent(totalBytes, forKey: .totalBytes)
        case .finished(let destination, let size):
            try container.encode(destination, forKey: .destination)
            try container.encode(size, forKey: .size)
        case .failed(let domain, let code, let message):
            try container.encode(domain, forKey: .domain)
            try container.encode(code, forKey: .code)
            try container.encode(message, forKey: .message)
        case .needsCredentials(let challenge):
            try container.encode(challenge, forKey: .challenge)
        case .waiting(let reason, let retryAt, let attempt):
            try container.encode(reason, forKey: .reason)
            try container.encode(retryAt, forKey: .retryAt)
            try container.encode(attempt, forKey: .attempt)
        }
    }
}
