import BATestSupport
import Foundation
import Testing

@testable import BAScheduling

@Suite struct PeriodicPolicyTests {
    let policy = PeriodicPolicy()

    @Test func defaults() {
        #expect(policy.baseInterval == 6 * Clock.hour)
        #expect(policy.minimumInterval == Clock.hour)
        #expect(policy.maximumInterval == 7 * Clock.day)
        #expect(policy.jitter == 0.1)
    }

    @Test func anUnusedAppBacksOffDayAfterDayUpToTheMaximum() {
        let neverLaunched = AppUsage()
        let hours = (0...10).map { day in
            policy.interval(usage: neverLaunched, registeredAt: Clock.start, now: Clock.start + Double(day) * Clock.day)
                / Clock.hour
        }
        #expect(hours == [6, 6, 12, 24, 48, 96, 168, 168, 168, 168, 168])

        // The same from the last launch, once it is more than 7 days back.
        var usage = AppUsage()
        usage.recordLaunch(at: Clock.start)
        let later = policy.interval(
            usage: usage, registeredAt: Clock.start - 100 * Clock.day,
            now: Clock.start + 8 * Clock.day)
        #expect(later == 7 * Clock.day)
        // Years of idleness stay finite and at the maximum.
        let ancient = policy.interval(
            usage: neverLaunched, registeredAt: Clock.start,
            now: Clock.start + 10_000 * Clock.day)
        #expect(ancient == 7 * Clock.day)
    }

    @Test func launchesShrinkTheIntervalTowardTheMinimum() {
        var usage = AppUsage()
        var previous = TimeInterval.infinity
        var intervals: [Int: TimeInterval] = [:]
        let now = Clock.start + 7 * Clock.day
        for launch in 1...50 {
            // Each launch further back within the last 7 days, so the newest is always `now`.
            usage.recordLaunch(at: now - Double(launch - 1) * (7 * Clock.day / 50))
            let interval = policy.interval(usage: usage, registeredAt: Clock.start, now: now)
            #expect(interval <= previous)
            previous = interval
            intervals[launch] = interval
        }
        #expect(intervals[7] == 3 * Clock.hour)  // once a day: base / 2
        #expect(intervals[35] == Clock.hour)  // 5 a day: base / 6 = the minimum
        #expect(intervals[50] == Clock.hour)  // never below the minimum
    }

    @Test func jitterStaysWithinTenPercentAndUsesBothSides() {
        var rng = SeededGenerator(state: 42)
        let interval = policy.interval(usage: AppUsage(), registeredAt: Clock.start, now: Clock.start)
        var lowest = TimeInterval.infinity
        var highest = -TimeInterval.infinity
        for _ in 0..<1_000 {
            let next = policy.nextRun(
                after: Clock.start, usage: AppUsage(), registeredAt: Clock.start,
                now: Clock.start, using: &rng)
            let ratio = next.timeIntervalSince(Clock.start) / interval
            lowest = min(lowest, ratio)
            highest = max(highest, ratio)
        }
        #expect(lowest >= 0.9 && lowest < 0.92)
        #expect(highest <= 1.1 && highest > 1.08)
    }

    @Test func jitterNeverLeavesTheMinimumAndMaximum() {
        var rng = SeededGenerator(state: 7)
        var busy = AppUsage()
        for hour in 0..<60 { busy.recordLaunch(at: Clock.start - Double(hour) * Clock.hour) }
        for _ in 0..<500 {
            let idle = policy.nextRun(
                after: Clock.start, usage: AppUsage(), registeredAt: Clock.start - 30 * Clock.day,
                now: Clock.start, using: &rng)
            #expect(idle.timeIntervalSince(Clock.start) <= 7 * Clock.day)
            #expect(idle.timeIntervalSince(Clock.start) >= 0.9 * 7 * Clock.day)
            let often = policy.nextRun(
                after: Clock.start, usage: busy, registeredAt: Clock.start, now: Clock.start,
                using: &rng)
            #expect(often.timeIntervalSince(Clock.start) >= Clock.hour)
            #expect(often.timeIntervalSince(Clock.start) <= 1.1 * Clock.hour)
        }
    }

    @Test func sameSeedSameSchedule() {
        var first = SeededGenerator(state: 1)
        var second = SeededGenerator(state: 1)
        let a = (0..<5).map { _ in
            policy.nextRun(
                after: Clock.start, usage: AppUsage(), registeredAt: Clock.start, now: Clock.start, using: &first)
        }
        let b = (0..<5).map { _ in
            policy.nextRun(
                after: Clock.start, usage: AppUsage(), registeredAt: Clock.start, now: Clock.start, using: &second)
        }
        #expect(a == b)
        #expect(Set(a).count == 5)
    }

    @Test func noJitterWhenZero() {
        var rng = SeededGenerator(state: 3)
        let exact = PeriodicPolicy(jitter: 0)
        let next = exact.nextRun(
            after: Clock.start, usage: AppUsage(), registeredAt: Clock.start, now: Clock.start,
            using: &rng)
        #expect(next == Clock.start + 6 * Clock.hour)
    }
}
