import BADownloadEngine
import BATestSupport
import Testing

/// `ServerGate` without I/O: a table of its transitions (inputs that bring a gate to a state, one
/// more input, the actions it returns and the state after), and its probe backoff.
@Suite("server gate")
struct ServerGateTests {
    typealias Gate = ServerGate
    typealias Action = ServerGate.Action

    enum Input: Sendable, CustomStringConvertible {
        case noAnswer(String, urgent: Bool, at: Duration)
        case probeDue(at: Duration)
        case answered(at: Duration)
        case networkChanged(at: Duration)
        case left(String, at: Duration)

        var description: String {
            switch self {
            case .noAnswer(let id, let urgent, let at): "noAnswer(\(id), urgent: \(urgent), at: \(at))"
            case .probeDue(let at): "probeDue(\(at))"
            case .answered(let at): "answered(\(at))"
            case .networkChanged(let at): "networkChanged(\(at))"
            case .left(let id, let at): "left(\(id), \(at))"
            }
        }
    }

    static let reason = "http://127.0.0.1:9/a: Couldn't connect to server"

    /// Random 0: equal jitter gives half the ceiling (urgent 125 ms, 250 ms, 500 ms, 1 s, 1 s…).
    static func feed(_ gate: inout Gate, _ input: Input) -> [Action] {
        switch input {
        case .noAnswer(let id, let urgent, let at):
            gate.noAnswer(id, urgent: urgent, reason: reason, now: at, random: 0)
        case .probeDue(let at): gate.probeDue(now: at)
        case .answered(let at): gate.answered(now: at)
        case .networkChanged(let at): gate.networkChanged(now: at)
        case .left(let id, let at): gate.left(id, now: at)
        }
    }

    struct Row: Sendable, CustomStringConvertible {
        var name: String
        var before: [Input]
        var input: Input
        var actions: [Action]
        var waiters: Set<String>
        var probe: String?
        var nextProbe: Duration?
        var description: String { name }
    }

    static let ms = Duration.milliseconds
    /// Three bundles of an ensure cut at once: a, b and c wait, urgent.
    static let threeDown: [Input] = [
        .noAnswer("a", urgent: true, at: .zero), .noAnswer("b", urgent: true, at: .zero),
        .noAnswer("c", urgent: true, at: .zero),
    ]
    static let probing = threeDown + [.probeDue(at: ms(125))]

    static let rows: [Row] = [
        Row(
            name: "the first request without an answer closes the gate: a probe is due in 125 ms (urgent)",
            before: [], input: .noAnswer("a", urgent: true, at: .zero),
            actions: [.announceDown(reason: reason, nextProbe: ms(125), waiting: 1)], waiters: ["a"],
            nextProbe: ms(125)),
        Row(
            name: "background work alone: a probe in 500 ms", before: [],
            input: .noAnswer("a", urgent: false, at: .zero),
            actions: [.announceDown(reason: reason, nextProbe: ms(500), waiting: 1)], waiters: ["a"],
            nextProbe: ms(500)),
        Row(
            name: "others failing meanwhile join the waiters, no second probe",
            before: [.noAnswer("a", urgent: true, at: .zero)], input: .noAnswer("b", urgent: true, at: ms(10)),
            actions: [], waiters: ["a", "b"], nextProbe: ms(125)),
        Row(
            name: "urgent work joining background waiters brings the probe within the urgent cap",
            before: [
                .noAnswer("a", urgent: false, at: .zero), .probeDue(at: ms(500)),
                .noAnswer("a", urgent: false, at: ms(500)), .probeDue(at: ms(1500)),
                .noAnswer("a", urgent: false, at: ms(1500)), .probeDue(at: ms(3500)),
                .noAnswer("a", urgent: false, at: ms(3500)),
            ],
            input: .noAnswer("b", urgent: true, at: ms(3600)),
            actions: [.announceDown(reason: reason, nextProbe: ms(3600) + ms(1000), waiting: 2)],
            waiters: ["a", "b"], nextProbe: ms(4600)),
        Row(
            name: "not yet due: nothing", before: threeDown, input: .probeDue(at: ms(100)), actions: [],
            waiters: ["a", "b", "c"], nextProbe: ms(125)),
        Row(
            name: "due: one probe, the earliest waiter", before: threeDown, input: .probeDue(at: ms(125)),
            actions: [.probe("a")], waiters: ["b", "c"], probe: "a"),
        Row(
            name: "an urgent waiter is probed before an earlier background one",
            before: [.noAnswer("a", urgent: false, at: .zero), .noAnswer("b", urgent: true, at: .zero)],
            input: .probeDue(at: ms(500)), actions: [.probe("b")], waiters: ["a"], probe: "b"),
        Row(
            name: "while the probe is out, another failing adds no probe", before: probing,
            input: .noAnswer("d", urgent: true, at: ms(130)), actions: [], waiters: ["b", "c", "d"], probe: "a"),
        Row(
            name: "the probe fails: the next one later (backoff doubles)", before: probing,
            input: .noAnswer("a", urgent: true, at: ms(130)),
            actions: [.announceDown(reason: reason, nextProbe: ms(130) + ms(250), waiting: 3)],
            waiters: ["a", "b", "c"], nextProbe: ms(380)),
        Row(
            name: "a failed probe keeps its place: the same fetch is tried next, not each in turn",
            before: probing + [.noAnswer("a", urgent: true, at: ms(130))], input: .probeDue(at: ms(380)),
            actions: [.probe("a")], waiters: ["b", "c"], probe: "a"),
        Row(
            name: "the urgent backoff stops at 2 s (1 s with no jitter)",
            before: threeDown
                + (1...8).flatMap { step -> [Input] in
                    [.probeDue(at: .seconds(step * 10)), .noAnswer("a", urgent: true, at: .seconds(step * 10))]
                } + [.probeDue(at: .seconds(90))],
            input: .noAnswer("a", urgent: true, at: .seconds(90)),
            actions: [.announceDown(reason: reason, nextProbe: .seconds(91), waiting: 3)], waiters: ["a", "b", "c"],
            nextProbe: .seconds(91)),
        Row(
            name: "the server answers: every waiter goes at once", before: probing, input: .answered(at: ms(140)),
            actions: [.release(["b", "c"]), .announceUp(released: 3, downFor: ms(140))], waiters: []),
        Row(
            name: "an answer with nobody waiting: nothing", before: [], input: .answered(at: ms(140)), actions: [],
            waiters: []),
        Row(
            name: "a network change: every waiter goes at once", before: threeDown,
            input: .networkChanged(at: ms(50)),
            actions: [.release(["a", "b", "c"]), .announceUp(released: 3, downFor: ms(50))], waiters: []),
        Row(
            name: "a waiter cancelled leaves", before: threeDown, input: .left("b", at: ms(10)), actions: [],
            waiters: ["a", "c"], nextProbe: ms(125)),
        Row(
            name: "the probe cancelled: the next waiter is probed at once", before: probing,
            input: .left("a", at: ms(130)), actions: [], waiters: ["b", "c"], nextProbe: ms(130)),
        Row(
            name: "the last waiter leaving opens the gate",
            before: [.noAnswer("a", urgent: true, at: .zero)], input: .left("a", at: ms(10)),
            actions: [.announceUp(released: 0, downFor: ms(10))], waiters: []),
        Row(
            name: "after it opened, a new failure closes it again from the first step",
            before: probing + [.answered(at: ms(140))], input: .noAnswer("b", urgent: true, at: ms(200)),
            actions: [.announceDown(reason: reason, nextProbe: ms(325), waiting: 1)], waiters: ["b"],
            nextProbe: ms(325)),
    ]

    @Test("each transition", arguments: rows)
    func transition(_ row: Row) {
        var gate = Gate()
        for input in row.before { _ = Self.feed(&gate, input) }
        let actions = Self.feed(&gate, row.input)
        #expect(actions == row.actions, "\(row.name)")
        #expect(Set(gate.waiters.keys) == row.waiters, "\(row.name)")
        #expect(gate.probe == row.probe, "\(row.name)")
        #expect(gate.nextProbe == row.nextProbe, "\(row.name)")
        #expect(gate.isDown == (!row.waiters.isEmpty || row.probe != nil), "\(row.name)")
    }

    @Test("the probe's backoff: doubling, capped (urgent 2 s, background a minute), equal jitter")
    func backoff() {
        let urgent = Gate.Schedule.urgent
        #expect(urgent.delay(afterFailures: 0, random: 0) == .milliseconds(125))
        #expect(urgent.delay(afterFailures: 0, random: 1) == .milliseconds(250))
        #expect(urgent.delay(afterFailures: 3, random: 1) == .seconds(2))
        #expect(urgent.delay(afterFailures: 40, random: 1) == .seconds(2))
        #expect(urgent.delay(afterFailures: 40, random: 0) == .seconds(1))
        #expect(Gate.Schedule.background.delay(afterFailures: 40, random: 1) == .seconds(60))
    }

    /// A thousand failures of a dozen transfers, probes, answers and cancellations in a seeded
    /// order: at most one probe at a time, the probe is never a waiter, nothing waits once the
    /// gate is open, and each transfer is started (probed or released) only while it waits.
    @Test("a seeded random run keeps the invariants")
    func randomRun() {
        var generator = SeededGenerator(state: 42)
        var gate = Gate()
        var now = Duration.zero
        var running: Set<String> = ["t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9", "t10", "t11"]
        for _ in 0..<2000 {
            now += .milliseconds(Int.random(in: 0...400, using: &generator))
            let pick = Int.random(in: 0..<10, using: &generator)
            var actions: [Action] = []
            if pick < 5, let id = running.randomElement(using: &generator) {
                // A running transfer (or the probe) gets no answer.
                running.remove(id)
                actions = gate.noAnswer(
                    id, urgent: Bool.random(using: &generator), reason: "x", now: now,
                    random: Double.random(in: 0..<1, using: &generator))
            } else if pick < 8 {
                actions = gate.probeDue(now: now)
            } else if pick == 8 {
                actions = gate.answered(now: now)
            } else if let id = gate.waiters.keys.randomElement(using: &generator) {
                actions = gate.left(id, now: now)
                running.insert(id)
            }
            for action in actions {
                switch action {
                case .probe(let id):
                    #expect(!running.contains(id), "\(id) probed while running")
                    running.insert(id)
                case .release(let ids):
                    for id in ids {
                        #expect(!running.contains(id), "\(id) released while running")
                        running.insert(id)
                    }
                case .announceDown(_, let next, _): #expect(next >= now)
                case .announceUp: break
                }
            }
            if let probe = gate.probe { #expect(gate.waiters[probe] == nil) }
            if !gate.isDown { #expect(gate.waiters.isEmpty && gate.probe == nil && gate.nextProbe == nil) }
            if gate.isDown { #expect(gate.probe != nil || gate.nextProbe != nil, "a gate down always has a next try") }
            #expect(running.count + gate.waiters.count == 12)
        }
    }
}
