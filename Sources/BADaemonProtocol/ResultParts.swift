/// Answers larger than a frame, sent in parts.
///
/// The frame cap (``DaemonProtocol/maximumFrameLength``) guards against garbage, never against a
/// listing: a result with many items (downloads, apps, an extension run's report, a purge plan)
/// goes out as several `response` frames for one request id, all but the last marked
/// `"more": true` (``ServerMessage/partialResponse(requestId:result:)``). ``DaemonClient`` joins
/// them, so a caller sees one result whatever its size.
extension ServerMessage.Result {
    /// Items per part: about 400 KB of downloads, well under the frame cap.
    public static let itemsPerPart = 1_000

    /// This result in parts of at most `itemsPerPart` items each (itself when it is not a list or
    /// is short). Joining them with ``appending(_:)`` gives this result back.
    public func parts(itemsPerPart: Int = Self.itemsPerPart) -> [ServerMessage.Result] {
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
        case .purge(let report):
            return chunks(report.entries).map { entries in
                var part = report
                part.entries = entries
                return .purge(part)
            }
        case .extensionRun(let report):
            // The scheduled and refused downloads are the long lists; the rest comes with the first part.
            let scheduled = chunks(report.scheduled)
            let refused = chunks(report.refused)
            var parts: [ServerMessage.Result] = []
            for index in 0..<max(scheduled.count, refused.count) {
                var part =
                    index == 0
                    ? report : ExtensionRunReport(bundleIdentifier: report.bundleIdentifier, version: report.version)
                part.scheduled = index < scheduled.count ? scheduled[index] : []
                part.refused = index < refused.count ? refused[index] : []
                if index > 0 { part.logs = [] }
                parts.append(.extensionRun(part))
            }
            return parts
        default:
            return [self]
        }
    }

    /// The number of items in a list result (the longest list of a report), 1 for any other.
    public var itemCount: Int {
        switch self {
        case .downloads(let downloads): downloads.count
        case .apps(let apps): apps.count
        case .purge(let report): report.entries.count
        case .extensionRun(let report): max(report.scheduled.count, report.refused.count)
        default: 1
        }
    }

    /// The frames of an answer to request `id`: every part encoded (parts that would exceed the
    /// frame cap are cut further), all but the last as ``ServerMessage/partialResponse(requestId:result:)``.
    /// - Throws: ``DaemonProtocolError`` when a single item does not fit a frame.
    public func frames(requestId id: UInt64) throws(DaemonProtocolError) -> [[UInt8]] {
        var pending = parts()
        var frames: [[UInt8]] = []
        while !pending.isEmpty {
            let part = pending.removeFirst()
            let message: ServerMessage =
                pending.isEmpty ? .response(requestId: id, result: part) : .partialResponse(requestId: id, result: part)
            do {
                frames.append(try DaemonProtocol.encode(message))
            } catch let error where error.code == .frameTooLarge && part.itemCount > 1 {
                // Large items: cut this part in two and try again.
                pending.insert(contentsOf: part.parts(itemsPerPart: (part.itemCount + 1) / 2), at: 0)
            }
        }
        return frames
    }

    /// The parts of one answer joined in order: what ``appending(_:)`` part by part gives, with
    /// each list built once.
    public static func joined(_ parts: [ServerMessage.Result]) -> ServerMessage.Result {
        guard var result = parts.first else { return .ok }
        switch result {
        case .downloads:
            var all: [DownloadInfo] = []
            all.reserveCapacity(parts.reduce(0) { $0 + $1.itemCount })
            for part in parts {
                guard case .downloads(let downloads) = part else { return parts.last ?? part }
                all += downloads
            }
            return .downloads(all)
        default:
            for part in parts.dropFirst() { result = result.appending(part) }
            return result
        }
    }

    /// This result with a later part of the same answer joined to it.
    public func appending(_ part: ServerMessage.Result) -> ServerMessage.Result {
        switch (self, part) {
        case (.downloads(let first), .downloads(let next)): return .downloads(first + next)
        case (.apps(let first), .apps(let next)): return .apps(first + next)
        case (.purge(var first), .purge(let next)):
            first.entries += next.entries
            return .purge(first)
        case (.extensionRun(var first), .extensionRun(let next)):
            first.scheduled += next.scheduled
            first.refused += next.refused
            return .extensionRun(first)
        default:
            // Parts of different kinds: the later one stands (an error ends an answer).
            return part
        }
    }
}
