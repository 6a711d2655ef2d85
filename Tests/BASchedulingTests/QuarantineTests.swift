import Foundation
import Testing

@testable import BAScheduling

@Suite struct QuarantineTests {
    let identity = ExtensionFileIdentity(path: "/apps/game/libext.so", size: 1_000, modificationTimeNanoseconds: 5)

    @Test func threeCrashesInARowQuarantine() {
        var state = QuarantineState()
        state.record(outcome: .crashed("signal 11"), identity: identity, at: Clock.start)
        state.record(outcome: .crashed("signal 6"), identity: identity, at: Clock.start + 60)
        #expect(state.isQuarantined(currentIdentity: identity) == nil)
        #expect(state.consecutiveFailures == 2)
        state.record(outcome: .crashed("signal 11"), identity: identity, at: Clock.start + 120)
        #expect(
            state.isQuarantined(currentIdentity: identity)
                == "crashed 3 times in a row (last: signal 11) at 2025-06-15T15:08:40Z")
        #expect(state.quarantine?.identity == identity)
        #expect(state.quarantine?.since == Clock.start + 120)
    }

    @Test func timeoutsCountAndAreNamed() {
        var state = QuarantineState()
        for minute in 0..<3 {
            state.record(
                outcome: .timedOut("no answer in 30 s"), identity: identity, at: Clock.start + Double(minute) * 60)
        }
        #expect(
            state.isQuarantined(currentIdentity: identity)
                == "timed out 3 times in a row (last: no answer in 30 s) at 2025-06-15T15:08:40Z")

        var mixed = QuarantineState()
        mixed.record(outcome: .timedOut("no answer in 30 s"), identity: identity, at: Clock.start)
        mixed.record(outcome: .crashed("signal 11"), identity: identity, at: Clock.start)
        mixed.record(outcome: .timedOut("no answer in 30 s"), identity: identity, at: Clock.start)
        #expect(
            mixed.isQuarantined(currentIdentity: identity)
                == "crashed or timed out 3 times in a row (last: timed out: no answer in 30 s) at 2025-06-15T15:06:40Z")
    }

    @Test func okResetsTheCountAndOtherFailuresLeaveIt() {
        var state = QuarantineState()
        state.record(outcome: .crashed("signal 11"), identity: identity, at: Clock.start)
        state.record(outcome: .crashed("signal 11"), identity: identity, at: Clock.start)
        state.record(outcome: .ok, identity: identity, at: Clock.start)
        #expect(state.consecutiveFailures == 0)
        state.record(outcome: .crashed("signal 11"), identity: identity, at: Clock.start)
        state.record(outcome: .otherFailure("missing entry point"), identity: identity, at: Clock.start)
        state.record(outcome: .crashed("signal 11"), identity: identity, at: Clock.start)
        #expect(state.consecutiveFailures == 2)
        #expect(state.isQuarantined(currentIdentity: identity) == nil)
        state.record(outcome: .otherFailure("exceeded memory"), identity: identity, at: Clock.start)
        state.record(outcome: .crashed("signal 11"), identity: identity, at: Clock.start)
        #expect(state.isQuarantined(currentIdentity: identity) != nil)
        // A run that worked (forced with `ba simulate`) lifts it.
        state.record(outcome: .ok, identity: identity, at: Clock.start)
        #expect(state == QuarantineState())
    }

    @Test func theThresholdIsAParameter() {
        var state = QuarantineState()
        state.record(outcome: .crashed("signal 11"), identity: identity, at: Clock.start, threshold: 1)
        #expect(state.isQuarantined(currentIdentity: identity) != nil)
        var patient = QuarantineState()
        for _ in 0..<4 {
            patient.record(outcome: .crashed("signal 11"), identity: identity, at: Clock.start, threshold: 5)
        }
        #expect(patient.isQuarantined(currentIdentity: identity) == nil)
    }

    @Test func aChangedFileReleasesTheQuarantine() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try directory.write("first build", to: "libext.so")
        let before = try #require(ExtensionFileIdentity.current(path: path))
        #expect(before.path == path)
        #expect(before.size == 11)
        #expect(ExtensionFileIdentity.current(path: path) == before)

        var state = QuarantineState()
        for _ in 0..<3 { state.record(outcome: .crashed("signal 11"), identity: before, at: Clock.start) }
        #expect(state.isQuarantined(currentIdentity: ExtensionFileIdentity.current(path: path)) != nil)
        let releasedEarly = state.releaseIfChanged(currentIdentity: ExtensionFileIdentity.current(path: path))
        #expect(!releasedEarly)

        try directory.write("second, fixed build", to: "libext.so")
        let after = try #require(ExtensionFileIdentity.current(path: path))
        #expect(after != before)
        #expect(state.isQuarantined(currentIdentity: after) == nil)
        let released = state.releaseIfChanged(currentIdentity: after)
        #expect(released)
        #expect(state == QuarantineState())
        let releasedAgain = state.releaseIfChanged(currentIdentity: after)
        #expect(!releasedAgain)
    }

    @Test func aNewModificationTimeAloneIsAChange() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try directory.write("same size", to: "libext.so")
        let before = try #require(ExtensionFileIdentity.current(path: path))
        try FileManager.default.setAttributes([.modificationDate: Clock.start], ofItemAtPath: path)
        let after = try #require(ExtensionFileIdentity.current(path: path))
        #expect(after.size == before.size)
        #expect(after.modificationTimeNanoseconds == 1_750_000_000 * 1_000_000_000)
        #expect(after != before)
    }

    @Test func aMissingFileHasNoIdentity() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        #expect(ExtensionFileIdentity.current(path: directory.file("nothing.so")) == nil)

        // Quarantined while missing: still quarantined while missing, released when it appears.
        var state = QuarantineState()
        for _ in 0..<3 { state.record(outcome: .crashed("signal 11"), identity: nil, at: Clock.start) }
        #expect(state.isQuarantined(currentIdentity: nil) != nil)
        let path = try directory.write("built", to: "nothing.so")
        let released = state.releaseIfChanged(currentIdentity: ExtensionFileIdentity.current(path: path))
        #expect(released)
    }

    @Test func clearForgetsEverything() {
        var state = QuarantineState()
        for _ in 0..<5 { state.record(outcome: .timedOut("no answer in 30 s"), identity: identity, at: Clock.start) }
        #expect(state.isQuarantined(currentIdentity: identity) != nil)
        state.clear()
        #expect(state == QuarantineState())
        #expect(state.isQuarantined(currentIdentity: identity) == nil)
    }
}
