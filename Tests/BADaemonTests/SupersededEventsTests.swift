import Testing

@testable import BADaemon

/// What a batch of engine events records: validators and progress of a transfer that finishes
/// in the same batch are dropped (the finished record supersedes them); everything else stays,
/// in order.
@Suite("engine events superseded within a batch")
struct SupersededEventsTests {
    static func finished(_ id: String) -> EngineEvent {
        .finished(id: id, path: "/f/\(id)", size: 1, sha256: "", receivedBytes: 1)
    }

    static let rows: [(String, [EngineEvent], [EngineEvent])] = [
        (
            "a small file: began, validator, progress, finished → began, finished",
            [
                .began(id: "a", offset: 0, isForeground: false), .validator(id: "a", value: "\"v\""),
                .progress(id: "a", bytesWritten: 1, totalBytes: 1), finished("a"),
            ],
            [.began(id: "a", offset: 0, isForeground: false), finished("a")]
        ),
        (
            "another transfer's validator and progress stay",
            [.validator(id: "b", value: "\"v\""), .progress(id: "b", bytesWritten: 5, totalBytes: nil), finished("a")],
            [.validator(id: "b", value: "\"v\""), .progress(id: "b", bytesWritten: 5, totalBytes: nil), finished("a")]
        ),
        (
            "a failure supersedes nothing (its validator may resume a retried partial file)",
            [
                .validator(id: "a", value: "\"v\""),
                .failed(id: "a", error: .init(.serverStatus, "HTTP 500")),
            ],
            [
                .validator(id: "a", value: "\"v\""),
                .failed(id: "a", error: .init(.serverStatus, "HTTP 500")),
            ]
        ),
        (
            "paused and needsCredentials stay",
            [.paused(id: "a", bytesOnDisk: 3), .needsCredentials(id: "a", challenge: "Basic"), finished("a")],
            [.paused(id: "a", bytesOnDisk: 3), .needsCredentials(id: "a", challenge: "Basic"), finished("a")]
        ),
        (
            "no finish: unchanged", [.progress(id: "a", bytesWritten: 1, totalBytes: 2)],
            [.progress(id: "a", bytesWritten: 1, totalBytes: 2)]
        ),
    ]

    @Test(arguments: rows.indices)
    func row(_ index: Int) {
        let (name, input, expected) = Self.rows[index]
        var events = input
        TransferCoordinator.dropSuperseded(&events)
        #expect(events == expected, "\(name)")
    }
}
