import BATestSupport
import Foundation
import Testing

@testable import BAScheduling

@Suite struct SchedulingStateTests {
    func populated() -> SchedulingState {
        var rng = SeededGenerator(state: 99)
        var state = SchedulingState()
        state.usage.recordLaunch(at: Clock.start)
        state.usage.recordLaunch(at: Clock.start + 0.25)
        state.periodic.ran(
            at: Clock.start + Clock.hour, policy: PeriodicPolicy(jitter: 0), usage: state.usage,
            registeredAt: Clock.start, using: &rng)
        state.allowance.record(duration: 42.5, at: Clock.start + Clock.hour)
        let identity = ExtensionFileIdentity(path: "/apps/game/libext.so", size: 123, modificationTimeNanoseconds: 456)
        for _ in 0..<3 { state.quarantine.record(outcome: .crashed("signal 11"), identity: identity, at: Clock.start) }
        return state
    }

    @Test func jsonRoundTrip() throws {
        let state = populated()
        let decoded = try SchedulingState(jsonData: state.jsonData())
        #expect(decoded == state)
        #expect(try SchedulingState(jsonData: SchedulingState().jsonData()) == SchedulingState())
        // Also through a plain JSONEncoder/JSONDecoder, as basd might embed it.
        let plain = try JSONDecoder().decode(SchedulingState.self, from: JSONEncoder().encode(state))
        #expect(plain == state)
    }

    @Test func stableKeys() throws {
        let json = try #require(
            try JSONSerialization.jsonObject(with: populated().jsonData()) as? [String: Any])
        #expect(Set(json.keys) == ["usage", "periodic", "allowance", "quarantine"])
        let usage = try #require(json["usage"] as? [String: Any])
        #expect(Set(usage.keys) == ["launchDates"])
        let periodic = try #require(json["periodic"] as? [String: Any])
        #expect(Set(periodic.keys) == ["nextRun", "lastRun"])
        #expect(periodic["lastRun"] as? Double == 1_750_003_600)
        // 2 launches in the last 7 days: 6 h / (1 + 2/7) = 16 800 s after the run (no jitter here).
        #expect(periodic["nextRun"] as? Double == 1_750_020_400)
        let allowance = try #require(json["allowance"] as? [String: Any])
        #expect(Set(allowance.keys) == ["windowStart", "used"])
        let quarantine = try #require(json["quarantine"] as? [String: Any])
        #expect(Set(quarantine.keys) == ["consecutiveFailures", "consecutiveCrashes", "quarantine"])
        let record = try #require(quarantine["quarantine"] as? [String: Any])
        #expect(Set(record.keys) == ["reason", "since", "identity"])
        let identity = try #require(record["identity"] as? [String: Any])
        #expect(Set(identity.keys) == ["path", "size", "modificationTimeNanoseconds"])
    }

    @Test func missingPartsDecodeFresh() throws {
        let state = try SchedulingState(jsonData: Data(#"{ "usage": { "launchDates": [1750000000] } }"#.utf8))
        #expect(state.usage.lastLaunch == Clock.start)
        #expect(state.periodic == PeriodicState())
        #expect(state.allowance == RuntimeAllowance())
        #expect(state.quarantine == QuarantineState())
        #expect(try SchedulingState(jsonData: Data("{}".utf8)) == SchedulingState())
    }
}
