import Foundation

/// How often basd wakes an app's extension for a periodic check (`BAContentRequest.periodic`).
///
/// The interval starts from ``baseInterval`` and is scaled by the app's use:
///
/// ```
/// idleDays  = whole days since the last launch (since registration if never launched)
/// backoff   = 2 ^ max(0, idleDays - 1)          // 1 for the first idle day, then doubles daily
/// busy      = 1 + launchesInLast7Days / 7        // 2 for one launch a day
/// interval  = clamp(baseInterval * backoff / busy, minimumInterval, maximumInterval)
/// ```
///
/// With the defaults (6 h, 1 h, 7 days): an app launched once a day is checked every 3 h, one
/// launched 5 times a day every hour. An app never launched since it was registered is checked
/// every 6 h for its first 2 days, then every 12 h on day 2, 24 h on day 3, 48 h on day 4, 96 h on
/// day 5 and once a week from day 6 on; so is an app whose last launch is that old, once that
/// launch is more than 7 days back (before, its launches still shorten the interval). Both rules are
/// monotone: more launches never lengthen the interval, more idle time never shortens it.
///
/// ``nextRun(after:usage:registeredAt:now:using:)`` adds a uniform jitter of ±``jitter`` (10 %) so
/// that apps installed together do not all wake at once; the minimum and maximum are hard bounds,
/// jitter included.
package struct PeriodicPolicy: Codable, Sendable, Equatable {
    /// The interval before scaling by use, that of an app with no launch in the last 7 days and
    /// at most one idle day (a newly registered one): 6 hours.
    package var baseInterval: TimeInterval
    /// The shortest interval, however busy the app: 1 hour.
    package var minimumInterval: TimeInterval
    /// The longest interval, however long the app is unused: 7 days.
    package var maximumInterval: TimeInterval
    /// The relative jitter: the next run is within ±`jitter` × interval of the computed one. 0.1.
    package var jitter: Double

    /// Creates a policy; every value has a default.
    ///
    /// A `minimumInterval` above `maximumInterval` makes every interval `maximumInterval`;
    /// ``BasdSettings/load(path:)`` refuses such a configuration.
    ///
    /// - Parameters:
    ///   - baseInterval: Seconds; default 21 600 (6 h).
    ///   - minimumInterval: Seconds; default 3 600 (1 h).
    ///   - maximumInterval: Seconds; default 604 800 (7 days).
    ///   - jitter: A fraction in 0...1; default 0.1.
    package init(
        baseInterval: TimeInterval = 6 * 3_600,
        minimumInterval: TimeInterval = 3_600,
        maximumInterval: TimeInterval = 7 * 86_400,
        jitter: Double = 0.1
    ) {
        self.baseInterval = baseInterval
        self.minimumInterval = minimumInterval
        self.maximumInterval = maximumInterval
        self.jitter = jitter
    }

    /// The interval until the next periodic check, before jitter.
    ///
    /// - Parameters:
    ///   - usage: The app's launches.
    ///   - registeredAt: When the app was first registered; the idle time of an app never launched
    ///     is counted from here (its pre-launch period backs off like an unused app).
    ///   - now: The current time.
    /// - Returns: Seconds, within `minimumInterval...maximumInterval`.
    package func interval(usage: AppUsage, registeredAt: Date, now: Date) -> TimeInterval {
        let lastActivity = usage.lastLaunch ?? registeredAt
        // A last launch in the future (the clock went back) counts as "just now".
        let idleDays = Int(max(0, now.timeIntervalSince(lastActivity)) / 86_400)
        // 2^62 times any sane base is far past any maximum; the cap keeps the exponent finite.
        let backoff = pow(2, Double(min(max(0, idleDays - 1), 62)))
        let busy = 1 + Double(usage.launches(inLast: 7 * 86_400, now: now)) / 7
        return clamped(baseInterval * backoff / busy)
    }

    /// When the next periodic check is due: `reference` plus ``interval(usage:registeredAt:now:)``
    /// with jitter applied, the result kept within the minimum and maximum intervals.
    ///
    /// ```swift
    /// var rng = SystemRandomNumberGenerator()
    /// let next = policy.nextRun(after: lastRun, usage: usage, registeredAt: registered, now: now, using: &rng)
    /// ```
    ///
    /// - Parameters:
    ///   - reference: The time to count from, usually the end of the last run.
    ///   - usage: The app's launches.
    ///   - registeredAt: When the app was first registered.
    ///   - now: The current time (for the idle and launch counts).
    ///   - rng: The source of jitter; tests pass a seeded generator.
    package func nextRun(
        after reference: Date,
        usage: AppUsage,
        registeredAt: Date,
        now: Date,
        using rng: inout some RandomNumberGenerator
    ) -> Date {
        let base = interval(usage: usage, registeredAt: registeredAt, now: now)
        let spread = min(max(jitter, 0), 1)
        let factor = spread > 0 ? 1 + Double.random(in: -spread...spread, using: &rng) : 1
        return reference.addingTimeInterval(clamped(base * factor))
    }

    private func clamped(_ value: TimeInterval) -> TimeInterval {
        min(max(value, minimumInterval), maximumInterval)
    }

    private enum CodingKeys: String, CodingKey {
        case baseInterval, minimumInterval, maximumInterval, jitter
    }
}
