import BATestSupport
import Foundation
import Testing

@testable import BADaemon

/// `TransferWindow` as a table: each row a state (built by the events before it), one event, the
/// actions and the state after. The window is 4 wide (the next rows are read once 3 or fewer
/// are in the engine). `docs/architecture.md` describes the same rules.
@Suite("transfer window state machine")
struct TransferWindowTests {
    typealias Window = TransferWindow
    typealias Place = TransferWindow.Place

    static func background(_ id: String, _ priority: Int64 = 5) -> Window.Candidate {
        .init(id: id, priority: priority, isUrgent: false)
    }
    static let wait = Window.RetryWait(reason: "HTTP 503", until: Date(timeIntervalSince1970: 1_000))
    /// Before and after ``wait`` ends.
    static let earlier = Date(timeIntervalSince1970: 500)
    static let later = Date(timeIntervalSince1970: 1_500)

    /// A starting state, made by feeding events to a fresh 4-wide window.
    struct Start: CustomStringConvertible, Sendable {
        var name: String
        var events: [Window.Event]
        var description: String { name }

        var window: Window {
            var window = Window(window: 4)
            for event in events { _ = window.handle(event) }
            return window
        }
    }

    static let empty = Start(name: "empty", events: [])
    static let aInEngine = Start(name: "a in the engine", events: [.scheduled(background("a"))])
    static let full = Start(
        name: "a–d in the engine (full)", events: ["a", "b", "c", "d"].map { .scheduled(background($0)) })
    static let fullParked = Start(name: "full, e parked", events: full.events + [.scheduled(background("e"))])
    static let threeParked = Start(name: "b–d in the engine, rows parked", events: fullParked.events + [.ended("a")])
    static let restarted = Start(name: "restarted, nothing in the engine", events: [.restarted])
    static let aWaitsForSpace = Start(
        name: "a waits for space (1000 free), look armed",
        events: aInEngine.events + [.outOfSpace("a", freeBytes: 1000)])
    static let aWaitsLookDue = Start(
        name: "a waits for space (1000 free), look due",
        events: aWaitsForSpace.events + [.lookAgainDue(storeBlocked: false)])
    static let twoWaitLookDue = Start(
        name: "a (5, 1000 free) and b (9, 5000 free) wait for space, look due",
        events: [
            .scheduled(background("a")), .scheduled(background("b", 9)), .outOfSpace("a", freeBytes: 1000),
            .outOfSpace("b", freeBytes: 5000), .lookAgainDue(storeBlocked: false),
        ])
    static let aRetrying = Start(name: "a waits to retry", events: aInEngine.events + [.retrying("a", wait)])
    static let aUnstartable = Start(name: "a unstartable", events: aInEngine.events + [.unstartable("a")])
    static let aInEngineArmed = Start(name: "a in the engine, look armed", events: aInEngine.events + [.storeRefused])
    static let storeRefused = Start(name: "the store refused, look armed", events: [.storeRefused])
    static let lowPower = Start(name: "Low Power Mode", events: [.powerModeChanged(held: true)])

    static let starts = [
        empty, aInEngine, full, fullParked, threeParked, restarted, aWaitsForSpace, aWaitsLookDue, twoWaitLookDue,
        aRetrying, aUnstartable, aInEngineArmed, storeRefused, lowPower,
    ]

    struct Row: CustomStringConvertible, Sendable {
        var start: Start
        var event: Window.Event
        var actions: [Window.Action]
        var after: [String: Place]
        var parked = false
        var description: String { "\(start) + \(event)" }
    }

    static func engine(_ priority: Int64 = 5, _ retry: Window.RetryWait? = nil) -> Place {
        .inEngine(priority: priority, retry: retry)
    }
    static let fullPlaces: [String: Place] = ["a": engine(), "b": engine(), "c": engine(), "d": engine()]
    static let threePlaces: [String: Place] = ["b": engine(), "c": engine(), "d": engine()]
    static let aSpace: Place = .waitingForSpace(priority: 5, freeBytesWhenStopped: 1000)
    static let bSpace: Place = .waitingForSpace(priority: 9, freeBytesWhenStopped: 5000)

    static let rows: [Row] = [
        // Scheduling: the window, urgent ones, outranking, and waiting behind the queue.
        Row(start: empty, event: .scheduled(background("a")), actions: [.start("a")], after: ["a": engine()]),
        Row(start: full, event: .scheduled(background("e")), actions: [], after: fullPlaces, parked: true),
        Row(
            start: full, event: .scheduled(background("e", 9)), actions: [.start("e")],
            after: fullPlaces.merging(["e": engine(9)]) { $1 }),
        Row(
            start: full, event: .scheduled(.init(id: "u", priority: 0, isUrgent: true)), actions: [.start("u")],
            after: fullPlaces.merging(["u": engine(.max)]) { $1 }),
        Row(start: threeParked, event: .scheduled(background("f")), actions: [], after: threePlaces, parked: true),
        Row(
            start: threeParked, event: .scheduled(background("f", 6)), actions: [.start("f")],
            after: threePlaces.merging(["f": engine(6)]) { $1 }, parked: true),
        Row(start: empty, event: .admit(background("a")), actions: [.start("a")], after: ["a": engine()]),
        Row(start: aInEngine, event: .unstartable("a"), actions: [], after: ["a": .unstartable]),
        // Filling the window from the store.
        Row(start: empty, event: .restarted, actions: [.readQueue(limit: 4, excluding: [])], after: [:], parked: true),
        Row(
            start: aInEngine, event: .restarted, actions: [.readQueue(limit: 3, excluding: ["a"])],
            after: ["a": engine()], parked: true),
        Row(start: full, event: .restarted, actions: [], after: fullPlaces, parked: true),
        Row(
            start: threeParked, event: .eventsHandled, actions: [.readQueue(limit: 1, excluding: ["b", "c", "d"])],
            after: threePlaces, parked: true),
        Row(start: fullParked, event: .eventsHandled, actions: [], after: fullPlaces, parked: true),
        Row(start: empty, event: .eventsHandled, actions: [], after: [:]),
        Row(
            start: restarted, event: .queueRead([background("q1"), background("q2")], exhausted: true),
            actions: [.start("q1"), .start("q2")], after: ["q1": engine(), "q2": engine()]),
        Row(
            start: restarted, event: .queueRead([background("q1")], exhausted: false), actions: [.start("q1")],
            after: ["q1": engine()], parked: true),
        // Promotion: to the foreground wherever it is.
        Row(
            start: aInEngine, event: .promoted(background("a")), actions: [.promoteInEngine("a")],
            after: ["a": engine(.max)]),
        Row(
            start: aRetrying, event: .promoted(background("a")), actions: [.promoteInEngine("a")],
            after: ["a": engine(.max, wait)]),
        Row(
            start: fullParked, event: .promoted(background("e")), actions: [.start("e")],
            after: fullPlaces.merging(["e": engine(.max)]) { $1 }, parked: true),
        Row(
            start: aWaitsForSpace, event: .promoted(background("a")), actions: [.resumeAfterSpaceWait("a")], after: [:]),
        Row(start: aUnstartable, event: .promoted(background("a")), actions: [.start("a")], after: ["a": engine(.max)]),
        // `ba retry` of an active download.
        Row(
            start: aWaitsForSpace, event: .retryRequested("a", now: earlier), actions: [.resumeAfterSpaceWait("a")],
            after: [:]),
        // A wait to retry ends now (its reason kept: the listing says queue and the last failure).
        Row(
            start: aRetrying, event: .retryRequested("a", now: earlier), actions: [.retryInEngine("a")],
            after: ["a": engine(5, Window.RetryWait(reason: wait.reason, until: earlier))]),
        Row(
            start: aRetrying, event: .retryRequested("a", now: later), actions: [.retryInEngine("a")],
            after: ["a": engine(5, wait)]),
        Row(
            start: aInEngine, event: .retryRequested("a", now: earlier), actions: [.retryInEngine("a")],
            after: ["a": engine()]),
        // Cancel and uninstall: a transfer in the engine counts until the engine says it ended.
        Row(start: aInEngine, event: .cancelled("a"), actions: [.stopInEngine("a")], after: ["a": engine()]),
        Row(
            start: aWaitsForSpace, event: .cancelled("a"), actions: [.stopInEngine("a"), .deletePartialFile("a")],
            after: [:]),
        Row(start: aUnstartable, event: .cancelled("a"), actions: [.stopInEngine("a")], after: [:]),
        Row(start: empty, event: .cancelled("x"), actions: [.stopInEngine("x")], after: [:]),
        Row(
            start: aRetrying, event: .dropped("a"), actions: [.stopInEngine("a"), .deletePartialFile("a")],
            after: ["a": engine()]),
        Row(
            start: aWaitsForSpace, event: .dropped("a"), actions: [.stopInEngine("a"), .deletePartialFile("a")],
            after: [:]),
        // The engine's events.
        Row(start: aInEngine, event: .retrying("a", wait), actions: [], after: ["a": engine(5, wait)]),
        Row(start: empty, event: .retrying("x", wait), actions: [], after: [:]),
        Row(start: aRetrying, event: .began("a"), actions: [], after: ["a": engine()]),
        Row(start: aWaitsForSpace, event: .began("a"), actions: [], after: ["a": aSpace]),
        Row(start: aInEngine, event: .ended("a"), actions: [], after: [:]),
        Row(start: aRetrying, event: .ended("a"), actions: [], after: [:]),
        Row(start: aUnstartable, event: .ended("a"), actions: [], after: ["a": .unstartable]),
        // Out of space: out of the engine, and a look armed once.
        Row(start: aInEngine, event: .outOfSpace("a", freeBytes: 1000), actions: [.armLookAgain], after: ["a": aSpace]),
        Row(start: aRetrying, event: .outOfSpace("a", freeBytes: 1000), actions: [.armLookAgain], after: ["a": aSpace]),
        Row(start: aInEngineArmed, event: .outOfSpace("a", freeBytes: 1000), actions: [], after: ["a": aSpace]),
        Row(start: empty, event: .outOfSpace("x", freeBytes: 1000), actions: [], after: [:]),
        // The look: the store first, then the space.
        Row(
            start: aWaitsForSpace, event: .lookAgainDue(storeBlocked: false), actions: [.measureFreeSpace],
            after: ["a": aSpace]),
        Row(
            start: aWaitsForSpace, event: .lookAgainDue(storeBlocked: true), actions: [.armLookAgain],
            after: ["a": aSpace]),
        Row(start: storeRefused, event: .lookAgainDue(storeBlocked: false), actions: [], after: [:]),
        Row(
            start: aWaitsLookDue, event: .freeSpaceMeasured(1000 + Window.spaceMargin), actions: [.armLookAgain],
            after: ["a": aSpace]),
        Row(
            start: aWaitsLookDue, event: .freeSpaceMeasured(1001 + Window.spaceMargin),
            actions: [.resumeAfterSpaceWait("a")], after: [:]),
        Row(
            start: twoWaitLookDue, event: .freeSpaceMeasured(1_000_000),
            actions: [.resumeAfterSpaceWait("b"), .resumeAfterSpaceWait("a")], after: [:]),
        Row(
            start: twoWaitLookDue, event: .freeSpaceMeasured(70_000),
            actions: [.resumeAfterSpaceWait("a"), .armLookAgain], after: ["b": bSpace]),
        Row(start: empty, event: .storeRefused, actions: [.armLookAgain], after: [:]),
        Row(start: storeRefused, event: .storeRefused, actions: [], after: [:]),
        // The network and Low Power Mode.
        Row(
            start: aRetrying, event: .networkChanged, actions: [.retryAllInEngine(count: 1)],
            after: ["a": engine(5, wait)]),
        Row(start: aInEngine, event: .networkChanged, actions: [], after: ["a": engine()]),
        Row(start: empty, event: .powerModeChanged(held: true), actions: [.holdBackground(true)], after: [:]),
        Row(start: lowPower, event: .powerModeChanged(held: true), actions: [], after: [:]),
        Row(start: lowPower, event: .powerModeChanged(held: false), actions: [.holdBackground(false)], after: [:]),
    ]

    @Test("each row: the state, the event, the actions and the state after", arguments: rows)
    func row(_ row: Row) {
        var window = row.start.window
        let actions = window.handle(row.event)
        #expect(actions == row.actions)
        #expect(window.places == row.after)
        #expect(window.parked == row.parked)
        #expect(window.inEngineCount == window.inEngine.count)
    }

    @Test("every starting state is one the rows use")
    func startsAreUsed() {
        for start in Self.starts {
            #expect(Self.rows.contains { $0.start.name == start.name }, "\(start.name) has no row")
        }
    }

    /// Who waits in the queue (behind the background concurrency) after some events, and the
    /// order of those the engine holds: what listings show as `waitingFor: "queue"` and its place.
    struct QueueRow: CustomStringConvertible, Sendable {
        var name: String
        var events: [Window.Event]
        /// Those of a–e (as active downloads) that wait in the queue.
        var waiting: Set<String>
        var engineQueue: [String]
        /// Before ``wait``'s end, unless a row says otherwise.
        var now = Date(timeIntervalSince1970: 500)
        var description: String { name }
    }

    static let queueRows: [QueueRow] = [
        QueueRow(
            name: "none began: the engine's background ones wait, in order", events: full.events,
            waiting: ["a", "b", "c", "d"], engineQueue: ["a", "b", "c", "d"]),
        QueueRow(
            name: "a and c began", events: full.events + [.began("a"), .began("c")], waiting: ["b", "d"],
            engineQueue: ["b", "d"]),
        QueueRow(
            name: "parked: rows in the store wait too, after the engine's",
            events: fullParked.events + [.began("a"), .began("b")], waiting: ["c", "d", "e"], engineQueue: ["c", "d"]),
        QueueRow(
            name: "higher priority first, then the order the engine was given them",
            events: [.scheduled(background("a", 5)), .scheduled(background("b", 9)), .scheduled(background("c", 9))],
            waiting: ["a", "b", "c"], engineQueue: ["b", "c", "a"]),
        QueueRow(
            name: "urgent and promoted ones never wait",
            events: [
                .scheduled(.init(id: "a", priority: 5, isUrgent: true)), .scheduled(background("b")),
                .promoted(background("b")), .scheduled(background("c")),
            ], waiting: ["c"], engineQueue: ["c"]),
        QueueRow(
            name: "waiting to retry shows as a retry; began again, it runs",
            events: full.events + [.began("a"), .retrying("a", wait), .began("b"), .retrying("b", wait), .began("b")],
            waiting: ["c", "d"], engineQueue: ["c", "d"]),
        QueueRow(
            name: "a wait to retry over and not begun: back in the engine's queue, in its order",
            events: full.events + [.began("a"), .retrying("a", wait), .began("b")], waiting: ["a", "c", "d"],
            engineQueue: ["a", "c", "d"], now: Date(timeIntervalSince1970: 1_000)),
        QueueRow(
            name: "paused by the engine: back in its queue",
            events: full.events + [.began("a"), .began("b"), .paused("a")], waiting: ["a", "c", "d"],
            engineQueue: ["a", "c", "d"]),
        QueueRow(
            name: "ended, out of space, unstartable: not in the queue (nothing parked)",
            events: full.events + [
                .began("a"), .ended("a"), .outOfSpace("b", freeBytes: 1000), .unstartable("c"),
            ], waiting: ["d"], engineQueue: ["d"]),
        QueueRow(
            name: "handed back after a wait for space: behind those given to the engine before",
            events: [
                .scheduled(background("a")), .scheduled(background("b")), .began("a"),
                .outOfSpace("a", freeBytes: 1000), .admit(background("a")),
            ], waiting: ["a", "b"], engineQueue: ["b", "a"]),
        QueueRow(
            name: "restarted: every row waits in the store", events: [.restarted],
            waiting: ["a", "b", "c", "d", "e"], engineQueue: []),
        QueueRow(
            name: "the queue read to the end: nothing left in the store waits",
            events: [.restarted, .queueRead([background("a")], exhausted: true), .began("a")], waiting: [],
            engineQueue: []),
    ]

    @Test("who waits in the queue, and the engine's order", arguments: queueRows)
    func queue(_ row: QueueRow) {
        var window = Window(window: 4)
        for event in row.events { _ = window.handle(event) }
        #expect(Set(["a", "b", "c", "d", "e"].filter { window.waitsInQueue($0, now: row.now) }) == row.waiting)
        #expect(window.engineQueue(now: row.now) == row.engineQueue)
    }

    /// Low Power Mode is the window's, not a download's: it holds until it goes, whatever comes.
    @Test("Low Power Mode holds across other events and is let go once")
    func lowPowerHolds() {
        var window = Window(window: 4)
        #expect(window.handle(.powerModeChanged(held: true)) == [.holdBackground(true)])
        _ = window.handle(.scheduled(Self.background("a")))
        _ = window.handle(.ended("a"))
        #expect(window.backgroundHeld)
        #expect(window.handle(.powerModeChanged(held: false)) == [.holdBackground(false)])
        #expect(!window.backgroundHeld)
    }

    /// A download is in one place at a time, and the count of those in the engine is kept, over a
    /// long seeded run of every kind of event.
    @Test("a seeded run of 5,000 events keeps one place per download and the engine's count")
    func seededRun() {
        var window = Window(window: 4)
        var generator = SeededGenerator(state: 20)
        let ids = (0..<12).map { "t\($0)" }
        for _ in 0..<5_000 {
            let id = ids[Int(generator.next() % UInt64(ids.count))]
            let candidate = Window.Candidate(
                id: id, priority: Int64(generator.next() % 10), isUrgent: generator.next() % 5 == 0)
            let events: [Window.Event] = [
                .scheduled(candidate), .admit(candidate), .restarted, .queueRead([candidate], exhausted: true),
                .unstartable(id), .promoted(candidate), .retryRequested(id, now: Self.wait.until), .cancelled(id),
                .dropped(id), .began(id),
                .paused(id),
                .retrying(id, Self.wait), .ended(id), .outOfSpace(id, freeBytes: 1000), .eventsHandled, .storeRefused,
                .lookAgainDue(storeBlocked: false), .freeSpaceMeasured(100_000), .networkChanged,
                .powerModeChanged(held: generator.next() % 2 == 0),
            ]
            let actions = window.handle(events[Int(generator.next() % UInt64(events.count))])
            #expect(window.inEngineCount == window.inEngine.count)
            // Only transfers in the engine have begun; only unstarted background ones wait in it.
            #expect(window.started.isSubset(of: Set(window.inEngine.keys)))
            let now = Date(timeIntervalSince1970: generator.next() % 2 == 0 ? 500 : 1_000)
            #expect(
                window.engineQueue(now: now).allSatisfy {
                    window.waitsInQueue($0, now: now) && !window.started.contains($0)
                })
            for case .start(let started) in actions {
                guard case .inEngine = window.place(of: started) else {
                    Issue.record("\(started) was started but is not in the engine")
                    return
                }
            }
            for case .resumeAfterSpaceWait(let resumed) in actions where window.place(of: resumed) != nil {
                Issue.record("\(resumed) resumes after a space wait but the window still holds it")
                return
            }
        }
    }
}
