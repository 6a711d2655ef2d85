import BACore
import BADaemonProtocol
import BAStore
import Foundation

/// The owner of where events go: the app connections subscribed to their app's events, the CLI
/// connections observing every event, and one ``AppDeliveryStateMachine`` per app, whose actions
/// it applies: sends, walks of the undelivered events, extension wake-ups (through the
/// ``ExtensionCaller``), retries, and the content requests waiting for an app's extension.
///
/// It knows only the services below it, given in
/// ``init(store:configuration:executor:extensions:transfers:log:)``: the extension caller it wakes
/// extensions through, and the transfers its acknowledgements act on. It asks whether an
/// extension may be woken through its ``delegate``.
final class EventRouter: @unchecked Sendable {
    let store: BAStore
    /// basd's configuration: the attempts of an event's extension call, the clock.
    let configuration: BasdServices.Configuration
    /// The executor every method runs on (retries and slices are posted to it).
    let executor: ServiceExecutor
    /// basd's clock.
    let clock: ServiceClock
    /// Where extensions are woken (the ``ExtensionCaller``).
    let extensions: any ExtensionCalling
    /// What an extension's answer does to transfers (the ``TransferCoordinator``).
    let transfers: any EventTransfers
    let log: @Sendable (String) -> Void
    /// Who says whether an extension may be woken now (``BasdServices``); weak, as it owns the router.
    weak var delegate: (any EventRouterDelegate)?

    // Executor-confined state.
    /// Subscribed app connections, by app.
    var subscribers: [String: [ObjectIdentifier: Session]] = [:]
    /// CLI connections that follow every event (`ba events --follow`).
    var observers: [ObjectIdentifier: Session] = [:]
    /// App connections that follow their app's pack events, by app.
    var packFollowers: [String: [ObjectIdentifier: Session]] = [:]
    /// One delivery state machine per app that has anything going on.
    var machines: [String: AppDeliveryStateMachine] = [:]
    /// Content requests that asked for an app's extension, until they hold it.
    var contentCalls: [AppDeliveryStateMachine.CallID: (AppDeliveryStateMachine.CallID) -> Void] = [:]
    var nextCallID: AppDeliveryStateMachine.CallID = 0
    /// The event being recorded, while its app's machine decides where it goes: a caught-up
    /// session is sent just this one (see ``Session/caughtUp``).
    private var justRecorded: StoredEvent?
    /// When each app's last event runner ended: the next one waits out ``EventRouter/settle``
    /// from then, so events arriving in a stream go to a few runners, not one each.
    var lastRunnerEnded: [String: ContinuousClock.Instant] = [:]
    /// How the app's last failed event call ended (`crashed: signal 11`), for the reason of a park.
    var lastEventFailure: [String: String] = [:]
    /// Per app: the acknowledgements of event calls being applied (in slices, over several turns)
    /// and the ends of runners after them, one after another.
    var acknowledgements: [String: StepQueue] = [:]

    /// A router that wakes extensions through `extensions` and applies their answers to
    /// `transfers`; set ``delegate`` before the first event is recorded.
    init(
        store: BAStore, configuration: BasdServices.Configuration, executor: ServiceExecutor,
        extensions: any ExtensionCalling, transfers: any EventTransfers, log: @escaping @Sendable (String) -> Void
    ) {
        self.store = store
        self.configuration = configuration
        self.executor = executor
        self.clock = configuration.clock
        self.extensions = extensions
        self.transfers = transfers
        self.log = log
    }

    /// Whether a call of the app's extension runs (or its slot is held).
    func isExtensionBusy(_ app: String) -> Bool { (machines[app]?.slot ?? .idle) != .idle }

    /// Whether some app's events wait for its extension to be allowed again.
    var hasHeldBackEvents: Bool { machines.values.contains { $0.heldBack != nil } }

    /// Whether a session of the app itself is subscribed (the app is running).
    func hasAppSession(_ app: String) -> Bool { !(subscribers[app]?.isEmpty ?? true) }

    /// Whether anyone listens to transient progress.
    var hasListeners: Bool { !observers.isEmpty || !subscribers.isEmpty }

    // MARK: - Inputs

    /// Feeds `input` to the app's machine and applies what it says.
    func feed(_ app: String, _ input: AppDeliveryStateMachine.Input) {
        var machine = machines[app] ?? AppDeliveryStateMachine(attempts: configuration.extensionAttempts)
        let actions = machine.handle(input)
        machines[app] = machine.isQuiet ? nil : machine
        for action in actions { apply(action, app: app) }
    }

    /// A durable event was appended: the CLI observers see it, and it goes where the app's
    /// machine says.
    func recorded(_ event: StoredEvent) {
        if !observers.isEmpty, let wire = try? wireEvent(event, forApp: false) {
            send(wire, to: observers.values)
        }
        justRecorded = event
        feed(event.appIdentifier, .eventRecorded)
        if justRecorded != nil, let sessions = subscribers[event.appIdentifier] {
            // Not sent (the extension holds the app's events): the sessions fall behind, and the
            // next send walks the backlog.
            for session in sessions.values { session.caughtUp = false }
        }
        justRecorded = nil
    }

    /// Routes the app's undelivered events (at start, and after a quarantine is cleared).
    func route(_ app: String) { feed(app, .eventRecorded) }

    /// The scheduler's tick: apps whose events were held back try again.
    func schedulerTick() {
        for (app, machine) in machines where machine.heldBack != nil { feed(app, .schedulerTick) }
    }

    /// Progress between two durable records: pushed to whoever listens now, never stored.
    func transientProgress(of download: StoredDownload, bytesWritten: Int64, totalBytes: Int64?) {
        var event = WireEvent(
            sequence: 0, downloadUniqueIdentifier: download.uniqueIdentifier, identifier: download.identifier,
            change: .progress(bytesWritten: bytesWritten, totalBytes: totalBytes), appIdentifier: download.appIdentifier
        )
        send(event, to: observers.values)
        guard let sessions = subscribers[download.appIdentifier] else { return }
        event.appIdentifier = nil
        event.download = download.download
        send(event, to: sessions.values)
    }

    func subscribe(_ session: Session, client: ClientInfo) {
        guard !session.subscribed else { return }
        session.subscribed = true
        if client.role == .cli {
            observers[session.id] = session
        } else if let app = client.bundleIdentifier {
            session.subscribedApp = app
            subscribers[app, default: [:]][session.id] = session
            // After the `ok` reply (the caller writes it first): the backlog, in order.
            executor.async { self.feed(app, .sessionSubscribed) }
        }
    }

    /// `session` gets `app`'s pack events from now on (a `packs follow` request).
    func followPacks(_ session: Session, app: String) {
        session.followedPacksOf = app
        packFollowers[app, default: [:]][session.id] = session
    }

    func sessionClosed(_ session: Session) {
        observers[session.id] = nil
        if let app = session.followedPacksOf {
            packFollowers[app]?[session.id] = nil
            if packFollowers[app]?.isEmpty == true { packFollowers[app] = nil }
        }
        // The app the session subscribed for, kept by the session itself: the handshake state is
        // gone once the connection closes.
        guard let app = session.subscribedApp, subscribers[app]?.removeValue(forKey: session.id) != nil else { return }
        if subscribers[app]?.isEmpty == true { subscribers[app] = nil }
        feed(app, .sessionClosed)
    }

    // MARK: - Content requests

    /// Runs `start` when the app's extension is free (at once, or after the calls before it);
    /// `start` gets the call's id and must end with ``contentCallEnded(_:app:)`` with it, whatever happens.
    func requestExtension(
        for app: String, what: String, start: @escaping (AppDeliveryStateMachine.CallID) -> Void
    ) {
        nextCallID += 1
        let id = nextCallID
        contentCalls[id] = start
        feed(app, .contentCallRequested(id))
        if contentCalls[id] != nil {
            log("\(app): \(what) waits for the extension's current call to end")
        }
    }

    /// The content request `id` no longer holds the app's extension.
    func contentCallEnded(_ id: AppDeliveryStateMachine.CallID, app: String) {
        feed(app, .contentCallEnded(id))
    }

    // MARK: - Actions

    private func apply(_ action: AppDeliveryStateMachine.Action, app: String) {
        switch action {
        case .sendToApp:
            sendUndelivered(app)
        case .routeToExtension:
            routeToExtension(app)
        case .wake(let sequence):
            wake(app, sequence: sequence)
        case .retry(let delay):
            executor.after(delay) { [self] in feed(app, .retryDue) }
        case .park(let sequence, let failures):
            park(app, sequence: sequence, failures: failures)
        case .holdBack(let reason):
            log("events of \(app) wait: not waking its extension: \(reason)")
        case .startContentCall(let id):
            contentCalls.removeValue(forKey: id)?(id)
        case .contentCallWaits:
            break
        }
    }

    /// An asset pack's event: to the CLI observers (`ba events --follow`) and the app's
    /// connections that follow its packs (AssetPackManager), never stored.
    func sendPackEvent(_ event: PackEvent) {
        let followers = packFollowers[event.appIdentifier]?.values
        guard !observers.isEmpty || followers != nil else { return }
        do {
            let frame = try DaemonProtocol.encode(ServerMessage.packEvent(event))
            for session in observers.values { session.send(frame: frame) }
            for session in followers ?? [:].values { session.send(frame: frame) }
        } catch {
            log("could not encode a pack event of \(event.assetPackID): \(error.message)")
        }
    }

    /// Sends `event` to `sessions`, encoded once.
    func send(_ event: WireEvent, to sessions: some Collection<Session>) {
        guard !sessions.isEmpty else { return }
        do {
            let frame = try DaemonProtocol.encode(ServerMessage.event(event))
            for session in sessions { session.send(frame: frame) }
        } catch {
            log("could not encode event \(event.sequence) of \(event.identifier): \(error.message)")
        }
    }

    /// Sends the app's undelivered events to each subscribed connection, from the last each was
    /// sent: the event just recorded alone to a session that had all the others, else the backlog
    /// read from the store.
    private func sendUndelivered(_ app: String) {
        let recorded = justRecorded.flatMap { $0.appIdentifier == app ? $0 : nil }
        justRecorded = nil
        // The event just recorded, encoded once for every caught-up session of the app.
        var recordedFrame: [UInt8]?
        for session in (subscribers[app] ?? [:]).values {
            if session.caughtUp, let recorded {
                guard recorded.sequence > session.lastSentSequence else { continue }
                do {
                    let frame =
                        try recordedFrame
                        ?? DaemonProtocol.encode(ServerMessage.event(wireEvent(recorded, forApp: true)))
                    recordedFrame = frame
                    session.send(frame: frame)
                    session.lastSentSequence = recorded.sequence
                    continue
                } catch {
                    log("sending an event to \(app) failed: \(error)")
                    session.caughtUp = false
                    continue
                }
            }
            do {
                while true {
                    let events = try store.undeliveredEvents(app: app, after: session.lastSentSequence, limit: 256)
                    for event in events {
                        session.send(.event(try wireEvent(event, forApp: true)))
                        session.lastSentSequence = event.sequence
                    }
                    if events.count < 256 { break }
                }
                session.caughtUp = true
            } catch {
                log("sending events to \(app) failed: \(error)")
            }
        }
    }

    /// Walks the app's undelivered events in order, past parked ones: `began`/`paused`/`progress` have no extension
    /// entry point and are dropped (acknowledged); the first `finished`/`failed`/`needsCredentials`
    /// goes to the machine, with the reason the extension may not be called now, if any. Without an
    /// extension the events stay for the app's next connection.
    ///
    /// A page of events at a time, each page's dropped events acknowledged in one write; once a
    /// turn has spent ``TurnSize/defaultTarget``, the walk goes on in a later turn
    /// (``AppDeliveryStateMachine/Input/walkGoesOn``), so other clients are served in between
    /// (issue 33: the `began` events of 10,000 essential downloads, acknowledged one write each
    /// in one turn, held every other client for a quarter of a second after an install).
    private func routeToExtension(_ app: String) {
        let started = ContinuousClock.now
        do {
            guard let storedApp = try store.app(app) else { return }
            while true {
                // Parked events are the app's alone: the walk goes past them.
                let events = try store.undeliveredEvents(app: app, limit: Self.walkPage, includingParked: false)
                // The events before the first one for the extension, all droppable: acknowledged
                // together (`through` marks every undelivered, unparked event up to it, and this
                // page holds all of them in order).
                var dropThrough: Int64?
                defer {
                    if let dropThrough {
                        do {
                            try store.markDelivered(app: app, through: dropThrough, includingParked: false)
                        } catch {
                            log("dropping the events of \(app) that have no extension entry point failed: \(error)")
                        }
                    }
                }
                for event in events {
                    switch event.kind {
                    case .began, .paused, .progress, .waiting:
                        dropThrough = event.sequence
                    case .finished, .failed, .needsCredentials:
                        // Acknowledged before the machine hears of this event (it may wake the extension).
                        if let through = dropThrough {
                            dropThrough = nil
                            try store.markDelivered(app: app, through: through, includingParked: false)
                        }
                        guard storedApp.extensionPath != nil, extensions.isAvailable else {
                            if event.kind == .needsCredentials {
                                // Nobody can answer: fail the transfer rather than hang it.
                                transfers.respond(
                                    to: event.downloadUniqueIdentifier, disposition: 2, user: nil, password: nil)
                            }
                            return
                        }
                        let refusal = delegate?.delivery(self, refusalToWake: storedApp)
                        feed(app, .extensionNeeded(sequence: event.sequence, refusal: refusal))
                        return
                    }
                }
                if events.count < Self.walkPage { return }
                if ContinuousClock.now - started >= TurnSize.defaultTarget {
                    executor.yielding { [self] in feed(app, .walkGoesOn) }
                    return
                }
            }
        } catch {
            log("routing the events of \(app) to its extension failed: \(error)")
        }
    }

    /// Events one read of a walk takes.
    static let walkPage = 256

    // MARK: - Acknowledgements

    /// The app handled its events through `sequence`: they are delivered, and finished files it
    /// did not move are removed.
    func acknowledge(app: String, through sequence: Int64) throws {
        for event in try store.acknowledge(app: app, through: sequence) {
            if case .finished(let destination, _) = event.change { removeDelivered(destination) }
        }
    }

    /// Removes a delivered file the receiver left in place: a regular file only (a self-hosted
    /// asset pack's `finished` names the pack's link, which stays).
    func removeDelivered(_ path: String) {
        guard Self.size(path) != nil else { return }
        if unlink(path) != 0 && errno != ENOENT {
            log("could not remove the delivered file \(path): \(String(cString: strerror(errno)))")
        }
    }
}
