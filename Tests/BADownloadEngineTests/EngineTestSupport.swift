import BAAssetServer
import BADownloadEngine
import BATestSupport
import Foundation
import Testing

/// Reads an engine's events one at a time.
final class EventReader {
    var iterator: DownloadEvents.AsyncIterator
    var seen: [DownloadEvent] = []

    init(_ engine: DownloadEngine) { iterator = engine.events.makeAsyncIterator() }

    /// The next event that matches, recording everything before it.
    func next(where matches: (DownloadEvent) -> Bool) async -> DownloadEvent? {
        while let event = await iterator.next() {
            seen.append(event)
            if matches(event) { return event }
        }
        return nil
    }

    /// Waits for the transfer to end.
    func end(of id: String) async -> DownloadEvent? {
        await next { event in
            switch event {
            case .finished(let eventID, _, _, _, _), .failed(let eventID, _): eventID == id
            default: false
            }
        }
    }
}

/// Byte-for-byte equality without printing megabytes when it fails.
func sameBytes(_ actual: [UInt8]?, _ expected: [UInt8]) -> Bool { actual == expected }

func bytes(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
}

func sha256(_ data: [UInt8]) throws -> String {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.url.appendingPathComponent("f").path
    try Data(data).write(to: URL(fileURLWithPath: path))
    return try runProcessBlocking("/usr/bin/sha256sum", [path]).stdout.split(separator: " ")[0].lowercased()
}
