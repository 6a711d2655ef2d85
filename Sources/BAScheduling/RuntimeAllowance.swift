import Foundation

/// Whether an extension may run now, from ``RuntimeAllowance/admit(now:usage:policy:)``.
package enum Admission: Sendable, Equatable {
    /// The extension may run for at most `remaining` seconds of this window; basd makes the call's
    /// deadline the smaller of this and its per-call timeout.
    case allowed(remaining: TimeInterval)
    /// The allowance is used up until `until`, when a new window starts; `reason` says so in words,
    /// for the log and for `ba apps`.
    case refused(reason: String, until: Date)
}

/// An app's daily extension runtime budget: how much of its allowance the current 24-hour window
/// has used.
///
/// A window starts when the first run after the previous window's end starts, and lasts
/// `policy.windowLength` (24 h). Every run's duration counts against the window in which it
/// started; a run that takes longer than what was left overdraws the window (basd's deadline is
/// what prevents that), and the next run waits for the next window. Nothing is carried over.
///
/// `ba simulate` runs an extension without asking ``admit(now:usage:policy:)``, but basd still
/// calls ``record(duration:at:policy:)`` for it, so a developer's test runs are counted like
/// any other.
///
/// ```swift
/// switch state.allowance.admit(now: now, usage: state.usage, policy: policy) {
/// case .allowed(let remaining):
///     let deadline = min(remaining, settings.extensionCallTimeoutSeconds)
///     // … run …
///     state.allowance.record(duration: elapsed, at: end, policy: policy)
/// case .refused(let reason, let until):
///     log.info("\(app): \(reason)")
///     state.periodic.postpone(until: until)
/// }
/// ```
package struct RuntimeAllowance: Codable, Sendable, Equatable {
    /// When the current window started; nil before the first recorded run.
    package private(set) var windowStart: Date?
    /// Seconds of runtime recorded in the window that started at ``windowStart``.
    package private(set) var used: TimeInterval

    /// An allowance with no window yet.
    package init() {
        windowStart = nil
        used = 0
    }

    /// The end of the current window, or nil if there is none (never ran, or the window that
    /// started at ``windowStart`` is over at `now`).
    package func windowEnd(now: Date, policy: RuntimeAllowancePolicy = .init()) -> Date? {
        guard let windowStart else { return nil }
        let end = windowStart.addingTimeInterval(policy.windowLength)
        // `now < windowStart` only after the clock went back: treat the window as over rather
        // than let it last longer than its length.
        return now >= windowStart && now < end ? end : nil
    }

    /// Seconds used in the window open at `now` (0 when no window is open).
    package func used(now: Date, policy: RuntimeAllowancePolicy = .init()) -> TimeInterval {
        windowEnd(now: now, policy: policy) == nil ? 0 : used
    }

    /// Decides whether the app's extension may start a run at `now`.
    ///
    /// - Parameters:
    ///   - now: The current time.
    ///   - usage: The app's launches (they earn a bonus).
    ///   - policy: The allowance rules.
    /// - Returns: ``Admission/allowed(remaining:)`` with what is left of the allowance (the whole
    ///   allowance if no window is open), or ``Admission/refused(reason:until:)`` once it is used
    ///   up, with the end of the window.
    package func admit(now: Date, usage: AppUsage, policy: RuntimeAllowancePolicy = .init()) -> Admission {
        let allowance = policy.allowance(usage: usage, now: now)
        guard let end = windowEnd(now: now, policy: policy), let windowStart else {
            return .allowed(remaining: allowance)
        }
        let remaining = allowance - used
        if remaining > 0 { return .allowed(remaining: remaining) }
        let reason =
            "daily runtime allowance of \(Self.seconds(allowance)) used up "
            + "(\(Self.seconds(used)) in the window since \(windowStart.formatted(.iso8601))); "
            + "next window at \(end.formatted(.iso8601))"
        return .refused(reason: reason, until: end)
    }

    /// Records a finished run.
    ///
    /// The run counts against the window open when it started (`end - duration`); if none was
    /// open, a new window starts then.
    ///
    /// - Parameters:
    ///   - duration: The run's wall-clock duration in seconds (negative values count as 0).
    ///   - end: When the run ended.
    ///   - policy: The allowance rules (for the window length).
    package mutating func record(duration: TimeInterval, at end: Date, policy: RuntimeAllowancePolicy = .init()) {
        let duration = max(0, duration)
        let start = end.addingTimeInterval(-duration)
        if windowEnd(now: start, policy: policy) == nil {
            windowStart = start
            used = duration
        } else {
            used += duration
        }
    }

    /// `"300 s"`, or `"12.5 s"` for a fractional value.
    private static func seconds(_ value: TimeInterval) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() && abs(rounded) < 1e15 ? "\(Int(rounded)) s" : "\(rounded) s"
    }

    private enum CodingKeys: String, CodingKey {
        case windowStart, used
    }
}
