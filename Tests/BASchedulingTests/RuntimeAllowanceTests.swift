import Foundation
import Testing

@testable import BAScheduling

@Suite struct RuntimeAllowanceTests {
    let policy = RuntimeAllowancePolicy()

    @Test func defaults() {
        #expect(policy.baseAllowance == 300)
        #expect(policy.bonusPerLaunch == 30)
        #expect(policy.maximumBonus == 600)
        #expect(policy.bonusWindow == 7 * Clock.day)
        #expect(policy.windowLength == Clock.day)
        #expect(RuntimeAllowance().admit(now: Clock.start, usage: AppUsage()) == .allowed(remaining: 300))
    }

    @Test func usedUpAllowanceIsRefusedWithAReasonUntilTheWindowEnds() {
        var allowance = RuntimeAllowance()
        // The first run starts the window at Clock.start.
        allowance.record(duration: 200, at: Clock.start + 200, policy: policy)
        #expect(allowance.windowStart == Clock.start)
        #expect(
            allowance.admit(now: Clock.start + Clock.hour, usage: AppUsage(), policy: policy)
                == .allowed(remaining: 100))
        // A run that overdraws the rest (its deadline was 100 s; say the kill was late).
        allowance.record(duration: 112, at: Clock.start + 2 * Clock.hour, policy: policy)
        let admission = allowance.admit(now: Clock.start + 3 * Clock.hour, usage: AppUsage(), policy: policy)
        #expect(
            admission
                == .refused(
                    reason:
                        "daily runtime allowance of 300 s used up (312 s in the window since 2025-06-15T15:06:40Z); "
                        + "next window at 2025-06-16T15:06:40Z",
                    until: Clock.start + Clock.day))
    }

    @Test func theWindowResetsAfter24Hours() {
        var allowance = RuntimeAllowance()
        allowance.record(duration: 300, at: Clock.start + 300, policy: policy)
        guard
            case .refused(_, let until) = allowance.admit(
                now: Clock.start + Clock.day - 1, usage: AppUsage(),
                policy: policy)
        else {
            Issue.record("expected a refusal")
            return
        }
        #expect(until == Clock.start + Clock.day)
        #expect(allowance.admit(now: until, usage: AppUsage(), policy: policy) == .allowed(remaining: 300))
        #expect(allowance.used(now: until, policy: policy) == 0)

        // The next run starts a new window at its own start.
        allowance.record(duration: 50, at: Clock.start + 2 * Clock.day + 50, policy: policy)
        #expect(allowance.windowStart == Clock.start + 2 * Clock.day)
        #expect(allowance.used == 50)
        #expect(
            allowance.admit(now: Clock.start + 2 * Clock.day + Clock.hour, usage: AppUsage(), policy: policy)
                == .allowed(remaining: 250))
    }

    @Test func aRunCountsInTheWindowItStartedIn() {
        var allowance = RuntimeAllowance()
        allowance.record(duration: 10, at: Clock.start + 10, policy: policy)
        // Starts 1 s before the window ends, ends after.
        allowance.record(duration: 60, at: Clock.start + Clock.day + 59, policy: policy)
        #expect(allowance.windowStart == Clock.start)
        #expect(allowance.used == 70)
    }

    @Test func anOftenUsedAppGetsMore() {
        let now = Clock.start + 7 * Clock.day
        var usage = AppUsage()
        for launch in 0..<10 { usage.recordLaunch(at: now - Double(launch) * Clock.hour) }
        #expect(policy.allowance(usage: usage, now: now) == 600)
        #expect(RuntimeAllowance().admit(now: now, usage: usage, policy: policy) == .allowed(remaining: 600))

        for launch in 10..<40 { usage.recordLaunch(at: now - Double(launch) * Clock.hour) }
        #expect(policy.allowance(usage: usage, now: now) == 900)  // the bonus is capped at 600 s

        // Launches older than 7 days earn nothing.
        #expect(policy.allowance(usage: usage, now: now + 8 * Clock.day) == 300)

        var allowance = RuntimeAllowance()
        allowance.record(duration: 400, at: now, policy: policy)
        #expect(allowance.admit(now: now + 1, usage: AppUsage(), policy: policy).isRefused)
        #expect(allowance.admit(now: now + 1, usage: usage, policy: policy) == .allowed(remaining: 500))
    }

    @Test func aLargerConfiguredBaseIsNotCutByTheBonusCap() {
        let generous = RuntimeAllowancePolicy(baseAllowance: 3_600)
        var usage = AppUsage()
        for launch in 0..<40 { usage.recordLaunch(at: Clock.start - Double(launch) * Clock.hour) }
        #expect(generous.allowance(usage: usage, now: Clock.start) == 4_200)
    }
}

extension Admission {
    var isRefused: Bool {
        if case .refused = self { true } else { false }
    }
}
