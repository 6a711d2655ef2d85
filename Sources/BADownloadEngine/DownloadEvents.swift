/// The engine's events, one by one, read a batch at a time: iterating costs one suspension per
/// batch the engine thread handed over, not per event.
package struct DownloadEvents: AsyncSequence, Sendable {
    package typealias Element = DownloadEvent

    /// The events as the engine thread handed them over: everything of one turn together.
    package let batches: AsyncStream<[DownloadEvent]>

    package struct AsyncIterator: AsyncIteratorProtocol {
        var batches: AsyncStream<[DownloadEvent]>.AsyncIterator
        var current: [DownloadEvent] = []
        var index = 0

        package mutating func next() async -> DownloadEvent? {
            while index == current.count {
                guard let batch = await batches.next() else { return nil }
                current = batch
                index = 0
            }
            defer { index += 1 }
            return current[index]
        }
    }

    package func makeAsyncIterator() -> AsyncIterator { AsyncIterator(batches: batches.makeAsyncIterator()) }
}
