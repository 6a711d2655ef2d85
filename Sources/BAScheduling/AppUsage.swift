import Foundation

/// How often an app's own process has been launched: the input that makes periodic checks back off
/// for an unused app and shrink for a busy one, and that grows its daily runtime allowance.
///
/// basd records a launch each time the app's process connects to it. Only recent history is kept:
/// launches from the 30 days before the newest one, and at most the 64 newest. Counts over longer
/// spans, or of more than 64 launches, are therefore capped; no rule here looks further back than
/// 7 days or needs more than 35 launches, so this is enough.
///
/// ```swift
/// var usage = AppUsage()
/// usage.recordLaunch(at: now)
/// usage.launches(inLast: 7 * 86_400, now: now)  // 1
/// ```
package struct AppUsage: Codable, Sendable, Equatable {
    /// The most launch dates kept.
    package static let maximumLaunches = 64
    /// How far back (from the newest launch) launch dates are kept: 30 days.
    package static let retention: TimeInterval = 30 * 86_400

    /// The kept launch dates, oldest first.
    package private(set) var launchDates: [Date]

    /// An app that was never launched.
    package init() {
        launchDates = []
    }

    /// The most recent launch, or nil if the app was never launched. Always kept, however old.
    package var lastLaunch: Date? { launchDates.last }

    /// Records one launch of the app's process.
    ///
    /// Dates out of order (a clock that went back) are inserted in order. Then launches more than
    /// ``retention`` before the newest one are forgotten, and only the ``maximumLaunches`` newest kept.
    ///
    /// - Parameter date: When the process connected to basd.
    package mutating func recordLaunch(at date: Date) {
        let index = launchDates.lastIndex(where: { $0 <= date }).map { $0 + 1 } ?? 0
        launchDates.insert(date, at: index)
        guard let newest = launchDates.last else { return }
        let cutoff = newest.addingTimeInterval(-Self.retention)
        launchDates.removeAll { $0 < cutoff }
        if launchDates.count > Self.maximumLaunches {
            launchDates.removeFirst(launchDates.count - Self.maximumLaunches)
        }
    }

    /// The number of kept launches in the `interval` seconds up to and including `now`.
    ///
    /// Launches dated after `now` (recorded before the clock went back) are not counted.
    ///
    /// - Parameters:
    ///   - interval: The span to look back over, in seconds (at most ``retention`` is meaningful).
    ///   - now: The current time.
    package func launches(inLast interval: TimeInterval, now: Date) -> Int {
        let start = now.addingTimeInterval(-interval)
        return launchDates.reduce(0) { $0 + ($1 > start && $1 <= now ? 1 : 0) }
    }

    private enum CodingKeys: String, CodingKey {
        case launchDates
    }

    /// Decodes the launch dates, putting them in order and keeping the ``maximumLaunches`` newest,
    /// so a hand-edited state file cannot break the invariants.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let dates = try container.decodeIfPresent([Date].self, forKey: .launchDates) ?? []
        launchDates = Array(dates.sorted().suffix(Self.maximumLaunches))
    }
}
