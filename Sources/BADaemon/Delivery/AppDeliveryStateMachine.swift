/// Where one app's events go, and when its extension may be called, without I/O.
///
/// An app's undelivered events go to its subscribed connections while it has any; while it has
/// none, the events that have an extension entry point (`finished`, `failed`, `needsCredentials`)
/// wake its extension, one runner at a time, in event order (one runner calls the extension for
/// the events waiting then, one after another). The extension is one slot per app, shared with
/// content requests (install, update, periodic, simulate): a content request that finds it busy
/// waits in a FIFO and starts when the slot frees. While the extension handles events, they are
/// the extension's: an app that subscribes meanwhile is sent nothing until the runner ends (then
/// it gets the events the extension did not handle).
///
/// An event whose call fails `attempts` times (a crash, a timeout: a *poisoned* event) is parked:
/// it stays undelivered for the app's next connection, and the extension is handed the app's
/// later events past it, so one bad event does not hold back the rest.
///
/// The ``EventRouter`` feeds it ``Input``s and applies the returned ``Action``s (store reads,
/// sends, runner calls). `docs/architecture.md` has the table; `AppDeliveryStateMachineTests`
/// holds it as rows.
struct AppDeliveryStateMachine: Equatable {
    /// What the app's extension slot is doing.
    enum Slot: Equatable, Sendable {
        /// Nothing runs.
        case idle
        /// A content request holds it, from its manifest fetch to its call's end.
        case contentCall(CallID)
        /// The extension was woken for the event with this sequence.
        case eventCall(sequence: Int64)
    }

    /// A content request waiting for (or holding) the slot.
    typealias CallID = UInt64

    enum Input: Equatable, Sendable {
        /// An app connection asked for events.
        case sessionSubscribed
        /// A subscribed app connection closed.
        case sessionClosed
        /// An event was appended to the app's log.
        case eventRecorded
        /// The first undelivered event that needs the extension (found by ``Action/routeToExtension``),
        /// with the reason the extension may not be called now, if any.
        case extensionNeeded(sequence: Int64, refusal: String?)
        /// The runner woken for `sequence` ended: every call `ok` (`failed` nil), or the call for
        /// the event `failed` did not (the events before it were delivered; it and those after
        /// it were not).
        case eventCallEnded(sequence: Int64, failed: Int64?)
        /// A content request wants the slot.
        case contentCallRequested(CallID)
        /// The content request holding the slot ended (also when it ended before calling).
        case contentCallEnded(CallID)
        /// A retry asked for by ``Action/retry(after:)`` is due.
        case retryDue
        /// The scheduler's periodic look: events held back may go now.
        case schedulerTick
        /// A walk (``Action/routeToExtension``) ended its turn of the executor with events left to
        /// look at: it goes on in a later turn if nothing took the events meanwhile (a session, a
        /// call).
        case walkGoesOn
    }

    enum Action: Equatable, Sendable {
        /// Send the undelivered events to the app's subscribed connections.
        case sendToApp
        /// Look for the first undelivered event that needs the extension (dropping those that have
        /// no entry point), and answer with ``Input/extensionNeeded(sequence:refusal:)``.
        case routeToExtension
        /// Call the extension for this event (and the undelivered events after it, in one runner).
        case wake(sequence: Int64)
        /// Feed ``Input/retryDue`` after this long.
        case retry(after: Duration)
        /// The extension failed this event `failures` times: park it (it stays for the app's next
        /// connection, and the extension's walks of the app's events go past it from now on). The
        /// actions after it route the events again.
        case park(sequence: Int64, failures: Int)
        /// The extension may not be called now: the events wait (the scheduler's tick tries again).
        case holdBack(reason: String)
        /// Start this content request: it holds the slot.
        case startContentCall(CallID)
        /// This content request waits for the slot.
        case contentCallWaits(CallID)
    }

    /// Calls that may fail for one event before it is parked.
    let attempts: Int
    private(set) var sessions = 0
    private(set) var slot: Slot = .idle
    private(set) var waitingCalls: [CallID] = []
    /// Failed calls per event sequence.
    private(set) var failures: [Int64: Int] = [:]
    /// Why the events wait, while they do.
    private(set) var heldBack: String?

    init(attempts: Int) {
        self.attempts = max(1, attempts)
    }

    /// A call running or waiting, or events held back to try again: basd has work for this app
    /// (``IdleExit``), whether or not the app is connected.
    var hasWork: Bool { slot != .idle || !waitingCalls.isEmpty || heldBack != nil }

    /// Nothing is subscribed, no call runs or waits, no event is held: the router may forget it.
    var isQuiet: Bool { sessions == 0 && slot == .idle && waitingCalls.isEmpty && failures.isEmpty && heldBack == nil }

    mutating func handle(_ input: Input) -> [Action] {
        switch input {
        case .sessionSubscribed:
            sessions += 1
            // An event in the extension is the extension's until its call ends.
            if case .eventCall = slot { return [] }
            return [.sendToApp]
        case .sessionClosed:
            sessions = max(0, sessions - 1)
            return sessions == 0 && slot == .idle ? [.routeToExtension] : []
        case .eventRecorded:
            if sessions > 0 {
                if case .eventCall = slot { return [] }
                return [.sendToApp]
            }
            return slot == .idle ? [.routeToExtension] : []
        case .extensionNeeded(let sequence, let refusal):
            // Stale (an app subscribed or a call started since the walk was asked for): ignore.
            guard sessions == 0, slot == .idle else { return [] }
            if let refusal {
                let first = heldBack == nil
                heldBack = refusal
                return first ? [.holdBack(reason: refusal)] : []
            }
            heldBack = nil
            slot = .eventCall(sequence: sequence)
            return [.wake(sequence: sequence)]
        case .eventCallEnded(let sequence, let failed):
            guard slot == .eventCall(sequence: sequence) else { return [] }
            slot = .idle
            // The events before the failed one (all, if none failed) were delivered.
            failures = failures.filter { $0.key >= (failed ?? .max) }
            guard let failed else { return freed(route: true) }
            let count = failures[failed, default: 0] + 1
            failures[failed] = count
            if count >= attempts {
                // Parked: no longer counted here (the store remembers it), and the events go on.
                failures[failed] = nil
                return [.park(sequence: failed, failures: count)] + freed(route: true)
            }
            var actions = freed(route: false)
            if sessions > 0 {
                // The app connected during the call: it takes the event over.
                actions.append(.sendToApp)
            } else {
                actions.append(.retry(after: .milliseconds(200 * count)))
            }
            return actions
        case .contentCallRequested(let id):
            guard slot == .idle else {
                waitingCalls.append(id)
                return [.contentCallWaits(id)]
            }
            slot = .contentCall(id)
            return [.startContentCall(id)]
        case .contentCallEnded(let id):
            guard slot == .contentCall(id) else { return [] }
            slot = .idle
            return freed(route: true)
        case .retryDue:
            guard slot == .idle else { return [] }
            return sessions > 0 ? [.sendToApp] : [.routeToExtension]
        case .schedulerTick:
            guard heldBack != nil, sessions == 0, slot == .idle else { return [] }
            return [.routeToExtension]
        case .walkGoesOn:
            // A session that subscribed meanwhile was sent the events; a call that started will
            // route them when it ends.
            guard sessions == 0, slot == .idle else { return [] }
            return [.routeToExtension]
        }
    }

    /// The slot is free: the first waiting content request takes it; then (unless `route` is
    /// false) the events go where they belong.
    private mutating func freed(route: Bool) -> [Action] {
        var actions: [Action] = []
        if !waitingCalls.isEmpty {
            let next = waitingCalls.removeFirst()
            slot = .contentCall(next)
            actions.append(.startContentCall(next))
        }
        guard route else { return actions }
        if sessions > 0 {
            actions.append(.sendToApp)
        } else if slot == .idle {
            actions.append(.routeToExtension)
        }
        return actions
    }
}
