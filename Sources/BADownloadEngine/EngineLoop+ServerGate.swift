import Foundation
import HeapModule

// Servers that give no answer (engine thread): the transfers that failed wait at the server's
// ``ServerGate``, tried one at a time, and all go on at its first answer.
extension EngineLoop {
    /// Carries out what the machine said after a request ended: a wait to retry after a request
    /// that got no answer (no response head), or to a server that gives none now, waits at its
    /// server's gate instead of on its own.
    func ended(_ transfer: Transfer, _ action: TransferStateMachine.Action, answered: Bool) {
        if case .waitUntil(_, let attempt, let reason) = action, let server = transfer.serverKey,
            !answered || gates[server]?.isDown == true
        {
            waitAtGate(transfer, server: server, attempt: attempt, reason: reason)
            return
        }
        apply(action, to: transfer)
    }

    private func waitAtGate(_ transfer: Transfer, server: String, attempt: Int, reason: String) {
        transfer.persistValidator()
        // Waiting holds no descriptor; the file is opened again when it starts.
        transfer.closeFile()
        let key = ObjectIdentifier(transfer)
        // In `retrying` (cancel, promote and `retryNow` find it), without a due time: the gate starts it.
        retrying[key] = transfer
        if let other = gateOf[key], other != server { leaveGate(transfer) }
        gateOf[key] = server
        let now = clock.now()
        var delay = Duration.zero
        updateGate(server) { gate, random in
            defer { delay = max(.zero, (gate.nextProbe ?? now) - now) }
            return gate.noAnswer(transfer.id, urgent: transfer.startsAtOnce, reason: reason, now: now, random: random)
        }
        emit(.retrying(id: transfer.id, attempt: attempt, delay: delay, reason: reason))
    }

    /// Whether a transfer whose own wait to retry is over (a connection cut mid-body, say) waits
    /// at its server's gate instead, the server giving no answer now: then it joins the waiters.
    func joinsGate(_ transfer: Transfer) -> Bool {
        guard !gates.isEmpty, let server = transfer.serverKey, let gate = gates[server], gate.isDown else {
            return false
        }
        gateOf[ObjectIdentifier(transfer)] = server
        let now = clock.now()
        let reason = gate.reason
        updateGate(server) { gate, random in
            gate.noAnswer(transfer.id, urgent: transfer.startsAtOnce, reason: reason, now: now, random: random)
        }
        return true
    }

    /// Feeds one input to `server`'s gate (made if there is none), notes when its next probe is
    /// due (``gateTimes``) and carries out its actions.
    func updateGate(_ server: String, _ input: (inout ServerGate, Double) -> [ServerGate.Action]) {
        var gate =
            gates[server]
            ?? ServerGate(urgent: configuration.serverProbeUrgent, background: configuration.serverProbeBackground)
        let before = gate.nextProbe
        let actions = input(&gate, Double.random(in: 0..<1, using: &random))
        gates[server] = gate
        if let next = gate.nextProbe, next != before { gateTimes.insert(GateTime(until: next, server: server)) }
        performGate(server, actions)
    }

    /// `transfer` no longer waits at (or probes) a gate.
    func leaveGate(_ transfer: Transfer) {
        guard let server = gateOf.removeValue(forKey: ObjectIdentifier(transfer)), gates[server] != nil else {
            return
        }
        let now = clock.now()
        updateGate(server) { gate, _ in gate.left(transfer.id, now: now) }
    }

    /// A response head arrived (in a libcurl callback): noted while some server is down.
    func noteAnswer(_ transfer: Transfer) {
        if !gates.isEmpty { answers.append(transfer) }
    }

    /// The servers that answered this turn let their waiters go (after libcurl's callbacks,
    /// before the requests that ended are handled).
    func openAnsweredGates() {
        guard !answers.isEmpty else { return }
        let answered = answers
        answers.removeAll()
        let now = clock.now()
        for transfer in answered {
            // The probe answered: it waits no more.
            gateOf[ObjectIdentifier(transfer)] = nil
            guard let server = transfer.serverKey, gates[server] != nil else { continue }
            updateGate(server) { gate, _ in gate.answered(now: now) }
        }
    }

    /// Starts the probes that are due (``gateTimes``, soonest first: a turn does not walk every
    /// gate, however many servers give no answer).
    func probeDueGates() {
        let now = clock.now()
        dropStaleGateTimes()
        while let first = gateTimes.min, first.until <= now {
            _ = gateTimes.popMin()
            if gates[first.server]?.nextProbe == first.until {
                updateGate(first.server) { gate, _ in gate.probeDue(now: now) }
            }
            dropStaleGateTimes()
        }
    }

    /// Pops the due times of gates that opened or were rescheduled since.
    func dropStaleGateTimes() {
        while let first = gateTimes.min, gates[first.server]?.nextProbe != first.until { _ = gateTimes.popMin() }
    }

    func performGate(_ server: String, _ actions: [ServerGate.Action]) {
        for action in actions {
            switch action {
            case .probe(let id):
                // It stays at the gate (``gateOf``) until it gets an answer.
                if let transfer = transfers[id] { startWaiting(transfer) }
            case .release(let ids):
                for id in ids {
                    guard let transfer = transfers[id] else { continue }
                    gateOf[ObjectIdentifier(transfer)] = nil
                    startWaiting(transfer)
                }
            case .announceDown(let reason, let next, let waiting):
                emit(
                    .serverWaiting(
                        server: server, reason: reason, nextProbeIn: max(.zero, next - clock.now()), waiting: waiting))
            case .announceUp(let released, let downFor):
                gates[server] = nil
                emit(.serverAnswered(server: server, released: released, downFor: downFor))
            }
        }
    }

    /// Starts (or queues) a transfer that waited at a gate.
    private func startWaiting(_ transfer: Transfer) {
        guard transfer.machine.retryNow() else { return }
        retrying[ObjectIdentifier(transfer)] = nil
        if transfer.startsAtOnce { start(transfer) } else { enqueue(transfer) }
    }
}

/// When a gate's next probe is due.
struct GateTime: Comparable {
    let until: Duration
    let server: String
    static func < (a: GateTime, b: GateTime) -> Bool { a.until < b.until }
}
