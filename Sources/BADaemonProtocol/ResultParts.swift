/// Answers larger than a frame, sent in parts.
///
/// The frame cap (``DaemonProtocol/maximumFrameLength``) guards against garbage, never against a
/// listing: a result with many items (downloads, apps, an extension run's report, a purge plan)
/// goes out as several `response` frames for one request id, all but the last marked
/// `"more": true` (``ServerMessage/partialResponse(requestId:result:)``). ``DaemonClient`` joins
/// them, so a caller sees one result whatever its size.
extension ServerMessage.Result {
    /// Items per part: about 400 KB of downloads, well under the frame cap.
    package static let itemsPerPart = 1_000

    /// This result in parts of at most `itemsPerPart` items each (itself when it is not a list or
    /// is short). Joining them with ``appending(_:)`` gives this result back.
    package func parts(itemsPerPart: Int = Self.itemsPerPart) -> [ServerMessage.Result] {
        let size = max(1, itemsPerPart)
        func chunks<T>(_ items: [T]) -> [[T]] {
            guard items.count > size else { return [items] }
            return stride(from: 0, to: items.count, by: size).map { Array(items[$0..<min($0 + size, items.count)]) }
        }
        switch self {
        case .downloads(let downloads):
            return chunks(downloads).map { .downloads($0) }
        case .apps(let apps):
            return chunks(apps).map { .apps($0) }
        case .downloadList(let listing):
            // How many were not shown comes with the last part.
            let parts = chunks(listing.downloads)
            return parts.indices.map {
                .downloadList(
                    DownloadListing(downloads: parts[$0], notShown: $0 == parts.count - 1 ? listing.notShown : 0))
            }
        case .purge(let report):
            return chunks(report.entries).map { entries in
                var part = report
                part.entries = entries
                return .purge(part)
            }
        case .extensionRun(let report):
            // The scheduled and refused downloads and the log lines are the long lists; the rest
            // comes with the first part.
            let scheduled = chunks(report.scheduled)
            let refused = chunks(report.refused)
            let logs = chunks(report.logs)
            var parts: [ServerMessage.Result] = []
            for index in 0..<max(scheduled.count, refused.count, logs.count) {
                var part =
                    index == 0
                    ? report : ExtensionRunReport(bundleIdentifier: report.bundleIdentifier, version: report.version)
                part.scheduled = index < scheduled.count ? scheduled[index] : []
                part.refused = index < refused.count ? refused[index] : []
                part.logs = index < logs.count ? logs[index] : []
                parts.append(.extensionRun(part))
            }
            return parts
        default:
            return [self]
        }
    }

    /// The number of items in a list result (the longest list of a report), 1 for any other.
    package var itemCount: Int {
        switch self {
        case .downloads(let downloads): downloads.count
        case .apps(let apps): apps.count
        case .downloadList(let listing): listing.downloads.count
        case .purge(let report): report.entries.count
        case .extensionRun(let report): max(report.scheduled.count, report.refused.count, report.logs.count)
        default: 1
        }
    }

    /// The frames of an answer to request `id`: every part encoded (parts that would exceed the
    /// frame cap are cut further), all but the last as ``ServerMessage/partialResponse(requestId:result:)``.
    /// With `last` false this result is one page of a longer answer, and every frame is partial.
    /// - Throws: ``DaemonProtocolError`` when a single item does not fit a frame.
    package func frames(requestId id: UInt64, last: Bool = true) throws(DaemonProtocolError) -> [[UInt8]] {
        var pending = parts()
        var frames: [[UInt8]] = []
        while !pending.isEmpty {
            let part = pending.removeFirst()
            let message: ServerMessage =
                pending.isEmpty && last
                ? .response(requestId: id, result: part) : .partialResponse(requestId: id, result: part)
            do {
                frames.append(try DaemonProtocol.encode(message))
            } catch let error where error.code == .frameTooLarge && part.itemCount > 1 {
                // Large items: cut this part in two and try again.
                pending.insert(contentsOf: part.parts(itemsPerPart: (part.itemCount + 1) / 2), at: 0)
            }
        }
        return frames
    }

    /// The parts of one answer joined in one pass (``appending(_:)`` part after part would copy
    /// a long list once per part); nil for no parts.
    package static func joined(_ parts: [ServerMessage.Result]) -> ServerMessage.Result? {
        guard let first = parts.first else { return nil }
        switch first {
        case .downloads:
            var downloads: [DownloadInfo] = []
            for part in parts {
                guard case .downloads(let items) = part else {
                    return parts.dropFirst().reduce(first) { $0.appending($1) }
                }
                downloads += items
            }
            return .downloads(downloads)
        case .downloadList:
            var listing = DownloadListing(downloads: [])
            for part in parts {
                guard case .downloadList(let next) = part else {
                    return parts.dropFirst().reduce(first) { $0.appending($1) }
                }
                listing.downloads += next.downloads
                listing.notShown += next.notShown
            }
            return .downloadList(listing)
        default:
            return parts.dropFirst().reduce(first) { $0.appending($1) }
        }
    }

    /// This result with a later part of the same answer joined to it.
    package func appending(_ part: ServerMessage.Result) -> ServerMessage.Result {
        switch (self, part) {
        case (.downloads(let first), .downloads(let next)): return .downloads(first + next)
        case (.apps(let first), .apps(let next)): return .apps(first + next)
        case (.downloadList(var first), .downloadList(let next)):
            first.downloads += next.downloads
            first.notShown += next.notShown
            return .downloadList(first)
        case (.purge(var first), .purge(let next)):
            first.entries += next.entries
            return .purge(first)
        case (.extensionRun(var first), .extensionRun(let next)):
            first.scheduled += next.scheduled
            first.refused += next.refused
            first.logs += next.logs
            return .extensionRun(first)
        default:
            // Parts of different kinds: the later one stands (an error ends an answer).
            return part
        }
    }
}
