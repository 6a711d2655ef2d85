import Foundation

/// When an app's extension last ran and next runs its periodic check.
///
/// Missed runs are caught up once, like systemd's `Persistent=true`: if basd was not running
/// across one or many due times, ``isDue(now:)`` is true at the first check after it starts, the
/// extension runs once, and ``ran(at:policy:usage:registeredAt:using:)`` schedules the next run
/// from that run, not from the missed due time, so there is no burst of one run per missed
/// interval.
///
/// basd's loop for one app, on its serial queue:
///
/// ```swift
/// state.periodic.ensureScheduled(now: now, policy: policy, usage: state.usage,
///                                registeredAt: registered, using: &rng)
/// if state.periodic.isDue(now: now) {
///     // … admission and quarantine checks, run the extension …
///     state.periodic.ran(at: end, policy: policy, usage: state.usage, registeredAt: registered, using: &rng)
/// }
/// ```
package struct PeriodicState: Codable, Sendable, Equatable {
    /// When the next periodic check is due; nil until ``ensureScheduled(now:policy:usage:registeredAt:using:)``.
    package var nextRun: Date?
    /// When the last periodic check ended; nil if it never ran.
    package var lastRun: Date?

    /// A state with nothing scheduled and no run yet.
    package init(nextRun: Date? = nil, lastRun: Date? = nil) {
        self.nextRun = nextRun
        self.lastRun = lastRun
    }

    /// Whether a periodic check is due: a run is scheduled at or before `now`.
    ///
    /// However many due times passed while basd was down, this is one run: it stays true until
    /// ``ran(at:policy:usage:registeredAt:using:)`` or ``postpone(until:)``.
    package func isDue(now: Date) -> Bool {
        guard let nextRun else { return false }
        return nextRun <= now
    }

    /// Makes sure a run is scheduled, and that it is not absurdly far away.
    ///
    /// - With nothing scheduled, the next run is one jittered interval after the last run, or
    ///   after `now` if the extension never ran (a newly registered app; its `.install` call has
    ///   just fetched content, so there is nothing to check yet).
    /// - A next run more than `policy.maximumInterval` after `now` can only come from a clock that
    ///   went back; it is rescheduled from `now`, so an app is never starved for longer than the
    ///   maximum.
    /// - A next run in the past is kept: it is the catch-up run.
    ///
    /// Call it at start-up and whenever the app's state is looked at; it changes nothing when the
    /// schedule is sound.
    ///
    /// - Returns: true if the schedule changed (so the state should be saved).
    @discardableResult
    package mutating func ensureScheduled(
        now: Date,
        policy: PeriodicPolicy,
        usage: AppUsage,
        registeredAt: Date,
        using rng: inout some RandomNumberGenerator
    ) -> Bool {
        if let nextRun, nextRun.timeIntervalSince(now) <= policy.maximumInterval {
            return false
        }
        var reference = now
        if nextRun == nil, let lastRun, lastRun <= now { reference = lastRun }
        nextRun = policy.nextRun(after: reference, usage: usage, registeredAt: registeredAt, now: now, using: &rng)
        return true
    }

    /// Records that a periodic check ran, and schedules the next one from it.
    ///
    /// Call it after every run that actually happened, whatever its outcome (a crash or a timeout
    /// is for ``QuarantineState``), and also after a run forced with `ba simulate periodic`,
    /// which resets the schedule like any run.
    ///
    /// - Parameters:
    ///   - end: When the run ended; the next run is one jittered interval after it.
    ///   - policy: The interval rules.
    ///   - usage: The app's launches.
    ///   - registeredAt: When the app was first registered.
    ///   - rng: The source of jitter.
    package mutating func ran(
        at end: Date,
        policy: PeriodicPolicy,
        usage: AppUsage,
        registeredAt: Date,
        using rng: inout some RandomNumberGenerator
    ) {
        lastRun = end
        nextRun = policy.nextRun(after: end, usage: usage, registeredAt: registeredAt, now: end, using: &rng)
    }

    /// Brings the next run closer after a launch of the app (already recorded in `usage`).
    ///
    /// Launches shrink the interval, but a run scheduled while the app was idle can be up to
    /// `policy.maximumInterval` away; without this an app idle for a week and then used daily would
    /// wait up to that long for its first check. The next run becomes one jittered interval (with the
    /// launch counted) from `now` when that is sooner than the scheduled one; a sooner or due run
    /// is kept, so a launch never pushes a run out.
    ///
    /// - Parameters:
    ///   - now: When the app launched.
    ///   - policy: The interval rules.
    ///   - usage: The app's launches, this one included.
    ///   - registeredAt: When the app was first registered.
    ///   - rng: The source of jitter.
    /// - Returns: true if the schedule changed (so the state should be saved).
    @discardableResult
    package mutating func launched(
        now: Date,
        policy: PeriodicPolicy,
        usage: AppUsage,
        registeredAt: Date,
        using rng: inout some RandomNumberGenerator
    ) -> Bool {
        let candidate = policy.nextRun(after: now, usage: usage, registeredAt: registeredAt, now: now, using: &rng)
        if let nextRun, nextRun <= candidate { return false }
        nextRun = candidate
        return true
    }

    /// Defers a due run that could not happen now (its runtime allowance is used up, the user
    /// turned background activity off, …) to `date`, keeping a later scheduled run as it is.
    ///
    /// - Parameter date: The earliest time to try again, e.g. the `until` of
    ///   ``Admission/refused(reason:until:)``.
    package mutating func postpone(until date: Date) {
        if let nextRun, nextRun >= date { return }
        nextRun = date
    }

    private enum CodingKeys: String, CodingKey {
        case nextRun, lastRun
    }
}
