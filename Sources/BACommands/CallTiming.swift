/// The median and 99th percentile of repeated calls' durations (`ba run-extension --repeat`).
struct CallTiming: Equatable {
    var calls: Int
    var medianMilliseconds: Double
    var p99Milliseconds: Double

    /// nil for no durations. The median of an even count is the mean of the middle two; the p99
    /// is the nearest rank (the largest of fewer than 100 calls).
    init?(_ durations: [Duration]) {
        guard !durations.isEmpty else { return nil }
        let sorted = durations.map { $0.seconds * 1000 }.sorted()
        calls = sorted.count
        let middle = sorted.count / 2
        let median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        let rank = Int((0.99 * Double(sorted.count)).rounded(.up))
        medianMilliseconds = median.rounded(toPlaces: 3)
        p99Milliseconds = sorted[max(0, min(sorted.count - 1, rank - 1))].rounded(toPlaces: 3)
    }
}
