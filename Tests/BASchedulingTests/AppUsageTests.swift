import Foundation
import Testing

@testable import BAScheduling

@Suite struct AppUsageTests {
    @Test func countsLaunchesInAWindow() {
        var usage = AppUsage()
        #expect(usage.lastLaunch == nil)
        for day in 0..<10 {
            usage.recordLaunch(at: Clock.start + Double(day) * Clock.day)
        }
        let now = Clock.start + 9 * Clock.day + Clock.hour
        #expect(usage.lastLaunch == Clock.start + 9 * Clock.day)
        #expect(usage.launches(inLast: 7 * Clock.day, now: now) == 7)
        #expect(usage.launches(inLast: 30 * Clock.day, now: now) == 10)
        // A launch after `now` (the clock went back) is not counted.
        #expect(usage.launches(inLast: 7 * Clock.day, now: Clock.start + 5 * Clock.day) == 6)
    }

    @Test func keepsThirtyDaysAndAtMost64() {
        var usage = AppUsage()
        usage.recordLaunch(at: Clock.start)
        usage.recordLaunch(at: Clock.start + 31 * Clock.day)
        #expect(usage.launchDates == [Clock.start + 31 * Clock.day])

        for minute in 0..<100 {
            usage.recordLaunch(at: Clock.start + 40 * Clock.day + Double(minute) * 60)
        }
        #expect(usage.launchDates.count == AppUsage.maximumLaunches)
        #expect(usage.launchDates.first == Clock.start + 40 * Clock.day + 36 * 60)
        #expect(usage.lastLaunch == Clock.start + 40 * Clock.day + 99 * 60)
    }

    @Test func keepsTheLastLaunchHoweverOld() {
        var usage = AppUsage()
        usage.recordLaunch(at: Clock.start)
        #expect(usage.lastLaunch == Clock.start)
        #expect(usage.launches(inLast: 7 * Clock.day, now: Clock.start + 100 * Clock.day) == 0)
    }

    @Test func insertsAnOutOfOrderLaunchInOrder() {
        var usage = AppUsage()
        usage.recordLaunch(at: Clock.start + 2 * Clock.hour)
        usage.recordLaunch(at: Clock.start)
        usage.recordLaunch(at: Clock.start + Clock.hour)
        #expect(usage.launchDates == [Clock.start, Clock.start + Clock.hour, Clock.start + 2 * Clock.hour])
        #expect(usage.lastLaunch == Clock.start + 2 * Clock.hour)
    }
}
