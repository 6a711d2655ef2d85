import Testing

@testable import BADaemon

/// `AppDeliveryStateMachine` as a table: each row a state (built by the inputs before it), one
/// input, the actions and the state after. The same table is in `docs/architecture.md`.
@Suite("app delivery state machine")
struct AppDeliveryStateMachineTests {
    typealias Machine = AppDeliveryStateMachine

    /// A starting state, made by feeding inputs to a fresh machine (3 attempts per event).
    struct Start: CustomStringConvertible {
        var name: String
        var inputs: [Machine.Input]
        var description: String { name }

        var machine: Machine {
            var machine = Machine(attempts: 3)
            for input in inputs { _ = machine.handle(input) }
            return machine
        }
    }

    static let idle = Start(name: "idle, no session", inputs: [])
    static let subscribed = Start(name: "one session", inputs: [.sessionSubscribed])
    static let inEvent = Start(name: "extension has event 7", inputs: [.extensionNeeded(sequence: 7, refusal: nil)])
    static let inEventWithSession = Start(
        name: "extension has event 7, app subscribed meanwhile",
        inputs: [.extensionNeeded(sequence: 7, refusal: nil), .sessionSubscribed])
    static let inContent = Start(name: "content call 1 runs", inputs: [.contentCallRequested(1)])
    static let contentAndWaiting = Start(
        name: "content call 1 runs, 2 waits", inputs: [.contentCallRequested(1), .contentCallRequested(2)])
    static let eventAndWaiting = Start(
        name: "extension has event 7, content call 2 waits",
        inputs: [.extensionNeeded(sequence: 7, refusal: nil), .contentCallRequested(2)])
    static let failedTwice = Start(
        name: "event 7 failed twice",
        inputs: [
            .extensionNeeded(sequence: 7, refusal: nil), .eventCallEnded(sequence: 7, failed: 7),
            .extensionNeeded(sequence: 7, refusal: nil), .eventCallEnded(sequence: 7, failed: 7),
            .extensionNeeded(sequence: 7, refusal: nil),
        ])
    static let failedTwiceWithSession = Start(
        name: "event 7 failed twice, app subscribed during its third call",
        inputs: failedTwice.inputs + [.sessionSubscribed])
    static let failedTwiceAndWaiting = Start(
        name: "event 7 failed twice, content call 2 waits for its third call",
        inputs: failedTwice.inputs + [.contentCallRequested(2)])
    static let heldBack = Start(
        name: "held back (allowance used up)", inputs: [.extensionNeeded(sequence: 7, refusal: "allowance")])

    struct Row: CustomStringConvertible, Sendable {
        var start: String
        var input: Machine.Input
        var actions: [Machine.Action]
        var slotAfter: Machine.Slot
        var sessionsAfter: Int
        var description: String { "\(start) + \(input)" }
    }

    static let starts = [
        idle, subscribed, inEvent, inEventWithSession, inContent, contentAndWaiting, eventAndWaiting, failedTwice,
        failedTwiceWithSession, failedTwiceAndWaiting, heldBack,
    ]

    static let rows: [Row] = [
        // Sessions.
        Row(start: idle.name, input: .sessionSubscribed, actions: [.sendToApp], slotAfter: .idle, sessionsAfter: 1),
        Row(
            start: subscribed.name, input: .sessionClosed, actions: [.routeToExtension], slotAfter: .idle,
            sessionsAfter: 0),
        Row(
            start: subscribed.name, input: .sessionSubscribed, actions: [.sendToApp], slotAfter: .idle, sessionsAfter: 2
        ),
        // The event in the extension is the extension's until its call ends.
        Row(
            start: inEvent.name, input: .sessionSubscribed, actions: [], slotAfter: .eventCall(sequence: 7),
            sessionsAfter: 1),
        Row(
            start: inContent.name, input: .sessionSubscribed, actions: [.sendToApp], slotAfter: .contentCall(1),
            sessionsAfter: 1),
        // Recorded events.
        Row(start: idle.name, input: .eventRecorded, actions: [.routeToExtension], slotAfter: .idle, sessionsAfter: 0),
        Row(start: subscribed.name, input: .eventRecorded, actions: [.sendToApp], slotAfter: .idle, sessionsAfter: 1),
        Row(
            start: inEvent.name, input: .eventRecorded, actions: [], slotAfter: .eventCall(sequence: 7),
            sessionsAfter: 0),
        Row(
            start: inEventWithSession.name, input: .eventRecorded, actions: [], slotAfter: .eventCall(sequence: 7),
            sessionsAfter: 1),
        Row(start: inContent.name, input: .eventRecorded, actions: [], slotAfter: .contentCall(1), sessionsAfter: 0),
        // Waking the extension.
        Row(
            start: idle.name, input: .extensionNeeded(sequence: 7, refusal: nil), actions: [.wake(sequence: 7)],
            slotAfter: .eventCall(sequence: 7), sessionsAfter: 0),
        Row(
            start: idle.name, input: .extensionNeeded(sequence: 7, refusal: "off"),
            actions: [.holdBack(reason: "off")], slotAfter: .idle, sessionsAfter: 0),
        Row(
            start: heldBack.name, input: .extensionNeeded(sequence: 7, refusal: "allowance"), actions: [],
            slotAfter: .idle, sessionsAfter: 0),
        Row(
            start: heldBack.name, input: .schedulerTick, actions: [.routeToExtension], slotAfter: .idle,
            sessionsAfter: 0),
        Row(start: idle.name, input: .schedulerTick, actions: [], slotAfter: .idle, sessionsAfter: 0),
        Row(
            start: subscribed.name, input: .extensionNeeded(sequence: 7, refusal: nil), actions: [], slotAfter: .idle,
            sessionsAfter: 1),
        // A call's end.
        Row(
            start: inEvent.name, input: .eventCallEnded(sequence: 7, failed: nil), actions: [.routeToExtension],
            slotAfter: .idle, sessionsAfter: 0),
        Row(
            start: inEvent.name, input: .eventCallEnded(sequence: 7, failed: 7),
            actions: [.retry(after: .milliseconds(200))], slotAfter: .idle, sessionsAfter: 0),
        Row(
            start: inEventWithSession.name, input: .eventCallEnded(sequence: 7, failed: nil), actions: [.sendToApp],
            slotAfter: .idle, sessionsAfter: 1),
        Row(
            start: inEventWithSession.name, input: .eventCallEnded(sequence: 7, failed: 7), actions: [.sendToApp],
            slotAfter: .idle, sessionsAfter: 1),
        // A poisoned event: parked after its last attempt, and the app's other events go on past it
        // (to the extension, or to the app that connected meanwhile; a waiting content call first).
        Row(
            start: failedTwice.name, input: .eventCallEnded(sequence: 7, failed: 7),
            actions: [.park(sequence: 7, failures: 3), .routeToExtension], slotAfter: .idle, sessionsAfter: 0),
        Row(
            start: failedTwiceWithSession.name, input: .eventCallEnded(sequence: 7, failed: 7),
            actions: [.park(sequence: 7, failures: 3), .sendToApp], slotAfter: .idle, sessionsAfter: 1),
        Row(
            start: failedTwiceAndWaiting.name, input: .eventCallEnded(sequence: 7, failed: 7),
            actions: [.park(sequence: 7, failures: 3), .startContentCall(2)], slotAfter: .contentCall(2),
            sessionsAfter: 0),
        Row(
            start: eventAndWaiting.name, input: .eventCallEnded(sequence: 7, failed: nil),
            actions: [.startContentCall(2)], slotAfter: .contentCall(2), sessionsAfter: 0),
        Row(
            start: eventAndWaiting.name, input: .eventCallEnded(sequence: 7, failed: 7),
            actions: [.startContentCall(2), .retry(after: .milliseconds(200))], slotAfter: .contentCall(2),
            sessionsAfter: 0),
        Row(
            start: inEvent.name, input: .eventCallEnded(sequence: 8, failed: nil), actions: [],
            slotAfter: .eventCall(sequence: 7), sessionsAfter: 0),
        // A runner of several events whose call for a later event failed: the retry is for that one.
        Row(
            start: inEvent.name, input: .eventCallEnded(sequence: 7, failed: 12),
            actions: [.retry(after: .milliseconds(200))], slotAfter: .idle, sessionsAfter: 0),
        Row(
            start: failedTwice.name, input: .eventCallEnded(sequence: 7, failed: 9),
            actions: [.retry(after: .milliseconds(200))], slotAfter: .idle, sessionsAfter: 0),
        // Content requests.
        Row(
            start: idle.name, input: .contentCallRequested(1), actions: [.startContentCall(1)],
            slotAfter: .contentCall(1), sessionsAfter: 0),
        Row(
            start: inEvent.name, input: .contentCallRequested(2), actions: [.contentCallWaits(2)],
            slotAfter: .eventCall(sequence: 7), sessionsAfter: 0),
        Row(
            start: inContent.name, input: .contentCallEnded(1), actions: [.routeToExtension], slotAfter: .idle,
            sessionsAfter: 0),
        Row(
            start: contentAndWaiting.name, input: .contentCallEnded(1), actions: [.startContentCall(2)],
            slotAfter: .contentCall(2), sessionsAfter: 0),
        Row(
            start: inContent.name, input: .contentCallEnded(9), actions: [], slotAfter: .contentCall(1),
            sessionsAfter: 0),
        // Retries.
        Row(start: idle.name, input: .retryDue, actions: [.routeToExtension], slotAfter: .idle, sessionsAfter: 0),
        Row(start: subscribed.name, input: .retryDue, actions: [.sendToApp], slotAfter: .idle, sessionsAfter: 1),
        Row(start: inContent.name, input: .retryDue, actions: [], slotAfter: .contentCall(1), sessionsAfter: 0),
        // A walk that ended its turn goes on only if nobody took the events meanwhile.
        Row(start: idle.name, input: .walkGoesOn, actions: [.routeToExtension], slotAfter: .idle, sessionsAfter: 0),
        Row(start: subscribed.name, input: .walkGoesOn, actions: [], slotAfter: .idle, sessionsAfter: 1),
        Row(start: inContent.name, input: .walkGoesOn, actions: [], slotAfter: .contentCall(1), sessionsAfter: 0),
        Row(
            start: inEvent.name, input: .walkGoesOn, actions: [], slotAfter: .eventCall(sequence: 7),
            sessionsAfter: 0),
    ]

    @Test("each row: the state, the input, the actions and the state after", arguments: rows)
    func row(_ row: Row) throws {
        let start = try #require(Self.starts.first { $0.name == row.start })
        var machine = start.machine
        let actions = machine.handle(row.input)
        #expect(actions == row.actions)
        #expect(machine.slot == row.slotAfter)
        #expect(machine.sessions == row.sessionsAfter)
    }

    /// Defect S1 as a row: an app that subscribed and quit leaves its events to the extension.
    @Test("an app that subscribed and quit: the next event goes to the extension")
    func appQuit() {
        var machine = Machine(attempts: 3)
        #expect(machine.handle(.sessionSubscribed) == [.sendToApp])
        #expect(machine.handle(.sessionClosed) == [.routeToExtension])
        #expect(machine.handle(.eventRecorded) == [.routeToExtension])
        #expect(machine.handle(.extensionNeeded(sequence: 1, refusal: nil)) == [.wake(sequence: 1)])
        #expect(machine.handle(.eventCallEnded(sequence: 1, failed: nil)) == [.routeToExtension])
        #expect(machine.isQuiet)
    }

    /// A runner of events 1…5 fails at 3: 1 and 2 are delivered, the failure counts for 3 alone
    /// (one toward its attempts, whatever came before it), and the next runner starts at 3.
    @Test("a runner failing at its third event: the failure is that event's, and only once")
    func runnerFailsMidway() {
        var machine = Machine(attempts: 2)
        #expect(machine.handle(.extensionNeeded(sequence: 1, refusal: nil)) == [.wake(sequence: 1)])
        #expect(machine.handle(.eventCallEnded(sequence: 1, failed: 3)) == [.retry(after: .milliseconds(200))])
        #expect(machine.failures == [3: 1])
        #expect(machine.handle(.retryDue) == [.routeToExtension])
        #expect(machine.handle(.extensionNeeded(sequence: 3, refusal: nil)) == [.wake(sequence: 3)])
        // This time all of them return: nothing is left failing, and the machine is quiet.
        #expect(machine.handle(.eventCallEnded(sequence: 3, failed: nil)) == [.routeToExtension])
        #expect(machine.failures.isEmpty)
        #expect(machine.isQuiet)
    }

    /// A failed event is parked after the attempts (issue 19: one poisoned event held back every
    /// later one for good): the walk that follows goes past it, the next event wakes the
    /// extension, and the machine forgets the failures (the store remembers the park).
    @Test("after the last attempt an event is parked; the next event wakes the extension")
    func attemptsRunOut() {
        var machine = Machine(attempts: 2)
        _ = machine.handle(.extensionNeeded(sequence: 4, refusal: nil))
        #expect(machine.handle(.eventCallEnded(sequence: 4, failed: 4)) == [.retry(after: .milliseconds(200))])
        #expect(machine.handle(.retryDue) == [.routeToExtension])
        #expect(machine.handle(.extensionNeeded(sequence: 4, refusal: nil)) == [.wake(sequence: 4)])
        #expect(
            machine.handle(.eventCallEnded(sequence: 4, failed: 4)) == [
                .park(sequence: 4, failures: 2), .routeToExtension,
            ])
        #expect(machine.failures.isEmpty)
        // The walk found event 5 (4 is parked): the extension is woken for it.
        #expect(machine.handle(.extensionNeeded(sequence: 5, refusal: nil)) == [.wake(sequence: 5)])
        #expect(machine.handle(.eventCallEnded(sequence: 5, failed: nil)) == [.routeToExtension])
        #expect(machine.isQuiet)
        // The app connects: it is sent its undelivered events, the parked one among them.
        #expect(machine.handle(.sessionSubscribed) == [.sendToApp])
    }
}
