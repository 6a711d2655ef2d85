import Foundation
import Testing

@testable import BADaemon

/// When an idle basd exits: the rule as rows (what counts as busy) and as sequences of looks.
@Suite("Idle exit")
struct IdleExitTests {
    typealias Activity = IdleExit.Activity

    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    struct Row: Sendable, CustomTestStringConvertible {
        var what: String
        var activity: Activity
        /// The busy reason's text, or nil for idle.
        var busy: String?
        var testDescription: String { what }
    }

    static let rows: [Row] = [
        Row(what: "nothing at all", activity: Activity(), busy: nil),
        Row(what: "a client", activity: Activity(connections: 1), busy: "1 client connection"),
        Row(
            what: "two clients and downloads", activity: Activity(connections: 2, activeDownloads: 3),
            busy: "2 client connections, 3 active downloads"),
        Row(what: "a pack job", activity: Activity(packWork: 1), busy: "1 asset-pack job"),
        Row(
            what: "an extension's work", activity: Activity(otherWork: ["app's extension has work"]),
            busy: "app's extension has work"),
        Row(
            what: "a periodic run due in 10 min (before the 15 min timer)",
            activity: Activity(nextDue: start.addingTimeInterval(600)), busy: "something due in 600 s"),
        Row(
            what: "overdue counts as due now", activity: Activity(nextDue: start.addingTimeInterval(-5)),
            busy: "something due in 0 s"),
        Row(
            what: "due after the timer's next start: idle", activity: Activity(nextDue: start.addingTimeInterval(900)),
            busy: nil),
    ]

    @Test("what keeps basd running", arguments: rows)
    func busyReason(row: Row) {
        let rule = IdleExit(timeout: 300, wakeInterval: 900)
        #expect(rule.busyReason(row.activity, now: Self.start) == row.busy)
    }

    @Test("idle for the timeout at a look: exit; busy in between starts the idle time over")
    func looks() {
        var rule = IdleExit(timeout: 300, wakeInterval: 900)
        let idle = Activity()
        let busy = Activity(activeDownloads: 1)
        func at(_ seconds: TimeInterval) -> Date { Self.start.addingTimeInterval(seconds) }
        // First idle look: the idle time starts; look again a timeout later.
        #expect(rule.look(idle, now: at(0)) == .lookAgain(after: 300))
        // Woken early (a look before the timeout): wait for the rest.
        #expect(rule.look(idle, now: at(100)) == .lookAgain(after: 200))
        // A download came and went: the idle time starts over at the next idle look.
        #expect(rule.look(busy, now: at(200)) == .lookAgain(after: 30))
        #expect(rule.idleSince == nil)
        #expect(rule.look(idle, now: at(230)) == .lookAgain(after: 300))
        #expect(rule.look(idle, now: at(529)) == .lookAgain(after: 1))
        #expect(rule.look(idle, now: at(530)) == .exit(idleFor: 300))
    }

    @Test("a short timeout: busy looks come as often; a clock set back starts the idle time over")
    func shortTimeoutAndClockChange() {
        var rule = IdleExit(timeout: 0.5, wakeInterval: 900)
        #expect(rule.look(Activity(connections: 1), now: Self.start) == .lookAgain(after: 0.5))
        #expect(rule.look(Activity(), now: Self.start) == .lookAgain(after: 0.5))
        // The wall clock went back an hour: not "idle for -3600 s", idle from now.
        #expect(rule.look(Activity(), now: Self.start.addingTimeInterval(-3600)) == .lookAgain(after: 0.5))
        #expect(rule.look(Activity(), now: Self.start.addingTimeInterval(-3599)) == .exit(idleFor: 1))
    }
}
