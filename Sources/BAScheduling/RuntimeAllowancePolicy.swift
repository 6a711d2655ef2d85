import Foundation

/// How much extension runtime an app gets per 24-hour window.
///
/// ```
/// allowance = baseAllowance + min(bonusPerLaunch * launchesInLast(bonusWindow), maximumBonus)
/// ```
///
/// With the defaults an app gets 300 s a day, plus 30 s for each launch in the last 7 days, up to
/// 600 s of bonus: 900 s (15 minutes) for an app launched 20 times or more in a week. The bonus is
/// capped rather than the total, so a larger configured base is never cut down by the cap.
package struct RuntimeAllowancePolicy: Codable, Sendable, Equatable {
    /// The allowance of an app not launched in the bonus window: 300 s.
    package var baseAllowance: TimeInterval
    /// Extra runtime per launch in the bonus window: 30 s.
    package var bonusPerLaunch: TimeInterval
    /// The most extra runtime launches can earn: 600 s.
    package var maximumBonus: TimeInterval
    /// How far back launches earn a bonus: 7 days.
    package var bonusWindow: TimeInterval
    /// The length of a runtime window: 24 hours.
    package var windowLength: TimeInterval

    /// Creates a policy; every value has a default.
    ///
    /// - Parameters:
    ///   - baseAllowance: Seconds; default 300.
    ///   - bonusPerLaunch: Seconds; default 30.
    ///   - maximumBonus: Seconds; default 600.
    ///   - bonusWindow: Seconds; default 604 800 (7 days).
    ///   - windowLength: Seconds; default 86 400 (24 h).
    package init(
        baseAllowance: TimeInterval = 300,
        bonusPerLaunch: TimeInterval = 30,
        maximumBonus: TimeInterval = 600,
        bonusWindow: TimeInterval = 7 * 86_400,
        windowLength: TimeInterval = 86_400
    ) {
        self.baseAllowance = baseAllowance
        self.bonusPerLaunch = bonusPerLaunch
        self.maximumBonus = maximumBonus
        self.bonusWindow = bonusWindow
        self.windowLength = windowLength
    }

    /// The app's allowance for a window, in seconds.
    ///
    /// - Parameters:
    ///   - usage: The app's launches.
    ///   - now: The current time.
    package func allowance(usage: AppUsage, now: Date) -> TimeInterval {
        let launches = Double(usage.launches(inLast: bonusWindow, now: now))
        return max(0, baseAllowance) + min(max(0, bonusPerLaunch) * launches, max(0, maximumBonus))
    }

    private enum CodingKeys: String, CodingKey {
        case baseAllowance, bonusPerLaunch, maximumBonus, bonusWindow, windowLength
    }
}
