import Foundation

/// One server's requests that got no answer, without I/O: while a server is down (a request to it
/// got no HTTP response: refused, unreachable, cut or timed out before its head), the transfers
/// that failed wait here instead of each on its own backoff, and one of them at a time is tried
/// again (the probe). The first answer from the server (any response head, of any request), or a
/// network change, releases every waiter at once.
///
/// The probe's backoff is the gate's, not the transfers': it doubles per failed probe from
/// ``Schedule/initial`` up to ``Schedule/maximum`` with equal jitter (half fixed, half random),
/// and is ``urgent`` (a few seconds at most) while any waiter is urgent (foreground or essential:
/// someone waits for it), else ``background``.
///
/// The engine (``EngineLoop``) holds one per server that is down, by ``key(of:)``, and carries out
/// the actions each input returns. `ServerGateTests` holds the table of transitions.
package struct ServerGate: Sendable, Equatable {
    /// The probe's backoff: `initial` doubling per failed probe, up to `maximum`.
    package struct Schedule: Sendable, Equatable {
        package var initial: Duration
        package var maximum: Duration
        package init(initial: Duration, maximum: Duration) {
            self.initial = initial
            self.maximum = maximum
        }
        /// Work someone waits for: 250 ms doubling to 2 s.
        package static let urgent = Schedule(initial: .milliseconds(250), maximum: .seconds(2))
        /// Background work: 1 s doubling to a minute (an offline wait's cap).
        package static let background = Schedule(initial: .seconds(1), maximum: .seconds(60))

        /// The delay after `failures` failed probes; `random` in 0..<1.
        package func delay(afterFailures failures: Int, random: Double) -> Duration {
            let ceiling = min(initial * (1 << min(max(failures, 0), 30)), maximum)
            return ceiling / 2 + (ceiling / 2) * min(max(random, 0), 1)
        }
    }

    /// A transfer waiting for the server.
    package struct Waiter: Sendable, Equatable {
        package var urgent: Bool
        /// Arrival order: the earliest urgent waiter is the next probe.
        package var order: Int
    }

    /// What the engine does.
    package enum Action: Sendable, Equatable {
        /// Start this waiter now: it is the probe.
        case probe(String)
        /// Start these waiters now (in arrival order): the server answered, or the network changed.
        case release([String])
        /// The server is down (or a probe failed): tell who listens why, when the next probe is
        /// due (engine clock), and how many transfers wait.
        case announceDown(reason: String, nextProbe: Duration, waiting: Int)
        /// The gate opened: `released` transfers go on; the server was down for `downFor`.
        case announceUp(released: Int, downFor: Duration)
    }

    package let urgentSchedule: Schedule
    package let backgroundSchedule: Schedule
    /// The transfers waiting, by id.
    package private(set) var waiters: [String: Waiter] = [:]
    /// The waiter being tried now, if any.
    package private(set) var probe: String?
    /// The probe's place among the waiters: it keeps it when it fails (the same fetch is tried
    /// again, not each in turn).
    private var probeWaiter: Waiter?
    /// When the next probe is due (engine clock); nil while one is in flight or the gate is open.
    package private(set) var nextProbe: Duration?
    /// Probes that failed in a row.
    package private(set) var failedProbes = 0
    /// Since when the server is down (nil: open).
    package private(set) var downSince: Duration?
    /// The last failure without an answer.
    package private(set) var reason = ""
    private var order = 0

    package init(urgent: Schedule = .urgent, background: Schedule = .background) {
        urgentSchedule = urgent
        backgroundSchedule = background
    }

    /// Whether requests to the server wait (a request got no answer since the last answer).
    package var isDown: Bool { downSince != nil }
    private var schedule: Schedule {
        waiters.values.contains(where: \.urgent) ? urgentSchedule : backgroundSchedule
    }

    /// A request of `id` to the server got no answer (`reason`): `id` waits. The first such
    /// failure closes the gate; the probe's failure pushes the next probe back.
    package mutating func noAnswer(
        _ id: String, urgent: Bool, reason: String, now: Duration, random: Double
    ) -> [Action] {
        self.reason = reason
        let first = downSince == nil
        if first {
            downSince = now
            failedProbes = 0
        }
        let wasProbe = probe == id
        if wasProbe {
            probe = nil
            failedProbes += 1
            if let waiter = probeWaiter { waiters[id] = Waiter(urgent: waiter.urgent || urgent, order: waiter.order) }
            probeWaiter = nil
        }
        if waiters[id] == nil {
            order += 1
            waiters[id] = Waiter(urgent: urgent, order: order)
        }
        if first || wasProbe || (probe == nil && nextProbe == nil) {
            return scheduleProbe(now: now, random: random)
        }
        // Someone waits for it now: no later than the urgent schedule's wait from now.
        if urgent, let next = nextProbe, next > now + urgentSchedule.maximum {
            return scheduleProbe(now: now, random: random)
        }
        return []
    }

    /// The engine's clock reached ``nextProbe``: the earliest urgent waiter (else the earliest) is
    /// tried.
    package mutating func probeDue(now: Duration) -> [Action] {
        guard isDown, probe == nil, let next = nextProbe, next <= now else { return [] }
        let candidates = waiters.sorted { a, b in
            a.value.urgent != b.value.urgent ? a.value.urgent : a.value.order < b.value.order
        }
        guard let first = candidates.first?.key else { return open(now: now) }
        probeWaiter = waiters.removeValue(forKey: first)
        probe = first
        nextProbe = nil
        return [.probe(first)]
    }

    /// A request to the server got a response head (any status): every waiter goes now.
    package mutating func answered(now: Duration) -> [Action] {
        guard isDown else { return [] }
        return open(now: now)
    }

    /// A link, address or route came or went: every waiter goes now (the server may be
    /// reachable again); the gate closes again if they get no answer.
    package mutating func networkChanged(now: Duration) -> [Action] {
        guard isDown else { return [] }
        return open(now: now)
    }

    /// `id` no longer waits (cancelled, promoted, tried by hand, ended): a probe that leaves
    /// makes room for the next one at once; the last waiter leaving opens the gate.
    package mutating func left(_ id: String, now: Duration) -> [Action] {
        guard isDown else { return [] }
        if probe == id {
            probe = nil
            probeWaiter = nil
            guard waiters.isEmpty else {
                nextProbe = now
                return []
            }
            return open(now: now)
        }
        guard waiters.removeValue(forKey: id) != nil else { return [] }
        if waiters.isEmpty && probe == nil { return open(now: now) }
        return []
    }

    private mutating func scheduleProbe(now: Duration, random: Double) -> [Action] {
        let next = now + schedule.delay(afterFailures: failedProbes, random: random)
        nextProbe = next
        return [.announceDown(reason: reason, nextProbe: next, waiting: waiters.count + (probe == nil ? 0 : 1))]
    }

    private mutating func open(now: Duration) -> [Action] {
        let released = waiters.sorted { $0.value.order < $1.value.order }.map(\.key)
        let downFor = now - (downSince ?? now)
        let probing = probe != nil
        waiters = [:]
        probe = nil
        probeWaiter = nil
        nextProbe = nil
        failedProbes = 0
        downSince = nil
        reason = ""
        var actions: [Action] = []
        if !released.isEmpty { actions.append(.release(released)) }
        actions.append(.announceUp(released: released.count + (probing ? 1 : 0), downFor: downFor))
        return actions
    }

    /// The server a URL's requests go to: `scheme://host:port` (the scheme's port when the URL
    /// names none), lowercased; nil for a URL without a host.
    package static func key(of url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty
        else { return nil }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        let shownHost = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(shownHost):\(port)"
    }
}
