internal import BADaemonProtocol

/// Decides what one pushed event means for the app's delegate: I/O-free, so deduplication and
/// the progress deltas are unit tested without basd.
///
/// basd delivers at least once, in `sequence` order, and redelivers everything unacknowledged
/// after a reconnect; a durable event (`sequence > 0`) is therefore delivered only if it is past
/// the highest one already delivered in this process. Progress events carry the running total;
/// the delegate wants the bytes since its last callback, so the filter keeps the last total it
/// passed on per download.
struct AppEventFilter: Sendable {
    /// What to do with one event.
    enum Decision: Equatable, Sendable {
        /// Already delivered in this process (a redelivery): do not call the delegate, but do
        /// acknowledge it (the earlier acknowledgement may have been lost with the connection).
        case duplicate
        /// Nothing to tell the delegate (a progress event that adds no bytes).
        case skip
        case began
        case paused
        case progress(bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64)
        case finished(path: String)
        case failed(domain: String, code: Int, message: String)
        case needsCredentials(challenge: String)
    }

    /// `NSURLSessionTransferSizeUnknown`: the total is not known.
    static let sizeUnknown: Int64 = -1

    /// The highest durable sequence decided on so far.
    private(set) var highestDelivered: Int64 = 0
    /// The last `totalBytesWritten` passed to the delegate, per download unique identifier.
    private(set) var lastTotals: [String: Int64] = [:]

    /// Decides on `event` and records it as delivered.
    mutating func decide(_ event: DownloadEvent) -> Decision {
        if event.sequence > 0 {
            guard event.sequence > highestDelivered else { return .duplicate }
            highestDelivered = event.sequence
        }
        let id = event.downloadUniqueIdentifier
        switch event.kind {
        case .began:
            // Progress continues from where the transfer resumed: count only what this run writes.
            lastTotals[id] = max(0, event.offset ?? 0)
            return .began
        case .paused:
            return .paused
        case .progress:
            let total = max(0, event.bytesWritten ?? 0)
            var last = lastTotals[id] ?? 0
            if total < last { last = 0 }  // the transfer restarted into a fresh file
            let delta = total - last
            guard delta > 0 else { return .skip }
            lastTotals[id] = total
            let expected =
                [event.totalBytes, event.download?.fileSize].lazy.compactMap { $0 }.first { $0 > 0 }
                ?? Self.sizeUnknown
            return .progress(bytesWritten: delta, totalBytesWritten: total, totalBytesExpectedToWrite: expected)
        case .finished:
            lastTotals[id] = nil
            return .finished(path: event.destination ?? "")
        case .failed:
            lastTotals[id] = nil
            return .failed(
                domain: event.errorDomain ?? BAErrorDomain,
                code: event.errorCode ?? BAError.Code.downloadInvalid.rawValue,
                message: event.errorMessage ?? "the download failed")
        case .needsCredentials:
            return .needsCredentials(challenge: event.challenge ?? "")
        case .waiting:
            // basd sends it to CLI observers only; Apple's delegate has no such callback.
            return .skip
        }
    }
}
