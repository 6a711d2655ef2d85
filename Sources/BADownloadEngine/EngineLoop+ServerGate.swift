import Foundation

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
        var gate =
            gates[server]
            ?? ServerGate(urgent: configuration.serverProbeUrgent, background: configuration.serverProbeBackground)
        let actions = gate.noAnswer(
            transfer.id, urgent: transfer.startsAtOnce, reason: reason, now: now,
            random: Double.random(in: 0..<1, using: &random))
        gates[server] = gate
        emit(
            .retrying(
                id: transfer.id, attempt: attempt, delay: max(.zero, (gate.nextProbe ?? now) - now), reason: reason))
        performGate(server, actions)
        if actions.contains(where: { if case .announceDown = $0 { true } else { false } }), gate.waiters.count == 1 {
            gatherWaiting(for: server, reason: reason)
        }
    }

    /// The server just stopped answering: the transfers already waiting out their own backoff
    /// for it (a connection cut mid-body) wait at its gate from now on, not each on its timer.
    private func gatherWaiting(for server: String, reason: String) {
        let now = clock.now()
        for transfer in retrying.values.sorted(by: { $0.sequence < $1.sequence }) {
            let key = ObjectIdentifier(transfer)
            guard gateOf[key] == nil, transfer.serverKey == server, var gate = gates[server] else { continue }
            gateOf[key] = server
            let actions = gate.noAnswer(
                transfer.id, urgent: transfer.startsAtOnce, reason: reason, now: now,
                random: Double.random(in: 0..<1, using: &random))
            gates[server] = gate
            performGate(server, actions)
        }
    }

    /// `transfer` no longer waits at (or probes) a gate.
    func leaveGate(_ transfer: Transfer) {
        guard let server = gateOf.removeValue(forKey: ObjectIdentifier(transfer)), var gate = gates[server] else {
            return
        }
        let actions = gate.left(transfer.id, now: clock.now())
        gates[server] = gate
        performGate(server, actions)
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
            guard let server = transfer.serverKey, var gate = gates[server] else {
                continue
            }
            let actions = gate.answered(now: now)
            gates[server] = gate
            performGate(server, actions)
        }
    }

    /// Starts the probes that are due.
    func probeDueGates() {
        let now = clock.now()
        for (server, gate) in gates {
            guard let next = gate.nextProbe, next <= now else { continue }
            var gate = gate
            let actions = gate.probeDue(now: now)
            gates[server] = gate
            performGate(server, actions)
        }
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
