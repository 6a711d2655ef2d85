import BATestSupport
import Foundation
import Testing

@testable import BAScheduling

@Suite struct PeriodicStateTests {
    let policy = PeriodicPolicy()
    let registered = Clock.start

    @Test func aNewAppIsScheduledOneIntervalFromNow() throws {
        var rng = SeededGenerator(state: 11)
        var state = PeriodicState()
        #expect(!state.isDue(now: Clock.start))
        let scheduled = state.ensureScheduled(
            now: Clock.start, policy: policy, usage: AppUsage(),
            registeredAt: registered, using: &rng)
        #expect(scheduled)
        let next = try #require(state.nextRun)
        #expect(next.timeIntervalSince(Clock.start) >= 0.9 * 6 * Clock.hour)
        #expect(next.timeIntervalSince(Clock.start) <= 1.1 * 6 * Clock.hour)
        #expect(!state.isDue(now: next - 1))
        #expect(state.isDue(now: next))
        // Sound schedules are left alone.
        let rescheduled = state.ensureScheduled(
            now: Clock.start + Clock.hour, policy: policy, usage: AppUsage(),
            registeredAt: registered, using: &rng)
        #expect(!rescheduled)
        #expect(state.nextRun == next)
    }

    @Test func aLaunchBringsARunScheduledWhileIdleCloserAndNeverPushesOneOut() throws {
        var rng = SeededGenerator(state: 13)
        var usage = AppUsage()
        var state = PeriodicState()
        // Idle for 10 days since registration: the run after this one is a week out.
        let idle = Clock.start + 10 * Clock.day
        state.ran(at: idle, policy: policy, usage: usage, registeredAt: registered, using: &rng)
        let farOut = try #require(state.nextRun)
        #expect(farOut == idle + policy.maximumInterval)

        let launch = idle + Clock.hour
        usage.recordLaunch(at: launch)
        #expect(state.launched(now: launch, policy: policy, usage: usage, registeredAt: registered, using: &rng))
        let next = try #require(state.nextRun)
        let interval = policy.interval(usage: usage, registeredAt: registered, now: launch)
        #expect(interval < 6 * Clock.hour, "one launch in the last week shortens the base interval")
        #expect(next.timeIntervalSince(launch) >= 0.9 * interval && next.timeIntervalSince(launch) <= 1.1 * interval)

        // A second launch right after: the run is already about that close, so it stays unless sooner.
        usage.recordLaunch(at: launch + 60)
        state.launched(now: launch + 60, policy: policy, usage: usage, registeredAt: registered, using: &rng)
        #expect(try #require(state.nextRun) <= next)

        // A due (catch-up) run is kept.
        let due = try #require(state.nextRun) + 1
        usage.recordLaunch(at: due)
        #expect(!state.launched(now: due, policy: policy, usage: usage, registeredAt: registered, using: &rng))
        #expect(state.isDue(now: due))
    }

    @Test func downtimeAcrossManyDueTimesRunsOnceThenSchedulesFromThatRun() throws {
        var rng = SeededGenerator(state: 12)
        var usage = AppUsage()
        var state = PeriodicState()
        usage.recordLaunch(at: Clock.start)
        state.ensureScheduled(now: Clock.start, policy: policy, usage: usage, registeredAt: registered, using: &rng)
        let missed = try #require(state.nextRun)

        // basd is down for 10 days (dozens of due times), then checks every minute for a day.
        let restart = missed + 10 * Clock.day
        // The overdue run is kept, not pushed into the future.
        let changed = state.ensureScheduled(
            now: restart, policy: policy, usage: usage, registeredAt: registered,
            using: &rng)
        #expect(!changed)
        var runs: [Date] = []
        for minute in 0..<(24 * 60) {
            let now = restart + Double(minute) * 60
            state.ensureScheduled(now: now, policy: policy, usage: usage, registeredAt: registered, using: &rng)
            if state.isDue(now: now) {
                runs.append(now)
                state.ran(at: now + 5, policy: policy, usage: usage, registeredAt: registered, using: &rng)
            }
        }
        #expect(runs.first == restart)
        // The second run comes one (backed-off) interval after the catch-up run, not a minute later.
        #expect(runs.count == 1)
        #expect(state.lastRun == restart + 5)
        let next = try #require(state.nextRun)
        let interval = policy.interval(usage: usage, registeredAt: registered, now: restart + 5)
        #expect(next.timeIntervalSince(restart + 5) >= 0.9 * interval)
        #expect(next.timeIntervalSince(restart + 5) <= min(1.1 * interval, policy.maximumInterval))
    }

    @Test func aRestoredStateWithOnlyALastRunCatchesUp() {
        var rng = SeededGenerator(state: 13)
        var state = PeriodicState(nextRun: nil, lastRun: Clock.start)
        state.ensureScheduled(
            now: Clock.start + 30 * Clock.day, policy: policy, usage: AppUsage(),
            registeredAt: registered, using: &rng)
        #expect(state.isDue(now: Clock.start + 30 * Clock.day))
    }

    @Test func aScheduleBeyondTheMaximumIsRescheduledFromNow() throws {
        // Scheduled a year ahead: the clock went back.
        var rng = SeededGenerator(state: 14)
        var state = PeriodicState(nextRun: Clock.start + 365 * Clock.day, lastRun: nil)
        let scheduled = state.ensureScheduled(
            now: Clock.start, policy: policy, usage: AppUsage(),
            registeredAt: registered, using: &rng)
        #expect(scheduled)
        let next = try #require(state.nextRun)
        #expect(next.timeIntervalSince(Clock.start) <= 1.1 * 6 * Clock.hour)
    }

    @Test func postponeDefersADueRunButKeepsALaterOne() {
        var state = PeriodicState(nextRun: Clock.start, lastRun: nil)
        state.postpone(until: Clock.start + Clock.day)
        #expect(state.nextRun == Clock.start + Clock.day)
        #expect(!state.isDue(now: Clock.start + Clock.hour))
        state.postpone(until: Clock.start + Clock.hour)
        #expect(state.nextRun == Clock.start + Clock.day)
    }
}
