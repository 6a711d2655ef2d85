import BACore
import BADaemonProtocol
import BAExtensionHost
import BAStore
import Foundation

// Events nobody is listening for, handed to the app's extension (executor).
extension EventRouter {
    /// Most events one runner is handed: the rest wait for the next runner, right after.
    static let eventsPerRunner = 512

    /// An event handed to the extension, with what it is called with.
    struct WokenEvent {
        let event: StoredEvent
        let runnerEvent: RunnerEvent
        let runKind: StoredExtensionRun.Event
    }

    /// How long after an app's event runner ended the next one starts, at the earliest: events
    /// that keep coming (downloads finishing one after another) are handed over a tenth of a
    /// second's worth at a time instead of a runner each; the first event after a quiet spell
    /// goes at once.
    static let settle = Duration.milliseconds(100)

    /// Calls the extension of `app` for the event `sequence` and the undelivered events after it
    /// that have an entry point (at most ``eventsPerRunner``), one after another in one runner,
    /// at once or once ``settle`` has passed since its previous runner ended. Each call that
    /// returns `ok` is acknowledged as the results come in (a group commit per handful); the
    /// runner's end feeds the machine, naming the event whose call failed, if any.
    func wake(_ app: String, sequence: Int64) {
        if let ended = lastRunnerEnded[app] {
            let since = clock.instant - ended
            if since < Self.settle {
                executor.after(Self.settle - since) { [self] in wakeNow(app, sequence: sequence) }
                return
            }
        }
        wakeNow(app, sequence: sequence)
    }

    private func wakeNow(_ app: String, sequence: Int64) {
        do {
            guard let storedApp = try store.app(app), let libraryPath = storedApp.extensionPath else {
                // Gone meanwhile (the app re-registered without an extension).
                feed(app, .eventCallEnded(sequence: sequence, failed: nil))
                return
            }
            let (woken, skippedThrough) = try eventsToWake(app, from: sequence)
            guard let first = woken.first else {
                // Delivered meanwhile, or only events whose download is gone.
                if let skippedThrough {
                    try store.markDelivered(app: app, through: skippedThrough, includingParked: false)
                }
                feed(app, .eventCallEnded(sequence: sequence, failed: nil))
                return
            }
            extensions.call(
                storedApp, libraryPath: libraryPath, event: first.runnerEvent,
                moreEvents: woken.dropFirst().map(\.runnerEvent), kind: first.runKind, bypassAllowance: false,
                cleanup: nil,
                callsEnded: { [self] results in acknowledge(results, of: storedApp, woken: woken) },
                countsTowardQuarantine: { [self] outcome in
                    // A poisoned event is parked after its attempts; its failures count once.
                    let event = woken[min(outcome.callIndex, woken.count - 1)].event.sequence
                    return (machines[app]?.failures[event] ?? 0) == 0
                }
            ) { [self] outcome in
                if case .ran(let result) = outcome, result.verdict == .ok {
                    acknowledge([result], of: storedApp, woken: woken)
                }
                // After the acknowledgements before it are applied: the machine may wake the
                // next runner, which must not be handed an event this one answered.
                acknowledgements(of: app).run { [self] done in
                    lastRunnerEnded[app] = clock.instant
                    var failed: Int64? = nil
                    if !outcome.isOK {
                        let event = woken[min(outcome.callIndex, woken.count - 1)].event.sequence
                        failed = event
                        lastEventFailure[app] =
                            outcome.detail.map { "\(outcome.verdictName): \($0)" } ?? outcome.verdictName
                        log("the extension of \(app) ended \(outcome.verdictName) handling event \(event)")
                    }
                    feed(app, .eventCallEnded(sequence: sequence, failed: failed))
                    done()
                }
            }
        } catch {
            log("waking the extension of \(app) for event \(sequence) failed: \(error)")
            feed(app, .eventCallEnded(sequence: sequence, failed: sequence))
        }
    }

    /// The undelivered events from `sequence` on that have an entry point and a download, in
    /// order (at most ``eventsPerRunner``), and the last event skipped before the first of them
    /// (one whose download is gone), if any. Nothing when `sequence` is no longer undelivered.
    private func eventsToWake(
        _ app: String, from sequence: Int64
    ) throws -> (
        [WokenEvent], skippedThrough: Int64?
    ) {
        var woken: [WokenEvent] = []
        var skippedThrough: Int64? = nil
        var after = sequence - 1
        while woken.count < Self.eventsPerRunner {
            let page = try store.undeliveredEvents(app: app, after: after, limit: 256, includingParked: false)
            if after == sequence - 1 && page.first?.sequence != sequence { return ([], nil) }
            for event in page {
                guard let runKind = Self.runKind(of: event.kind) else { continue }
                guard let download = try store.download(uniqueIdentifier: event.downloadUniqueIdentifier),
                    let runnerEvent = runnerEvent(event, download)
                else {
                    if woken.isEmpty { skippedThrough = event.sequence }
                    continue
                }
                woken.append(WokenEvent(event: event, runnerEvent: runnerEvent, runKind: runKind))
                if woken.count == Self.eventsPerRunner { break }
            }
            guard let last = page.last, page.count == 256 else { break }
            after = last.sequence
        }
        return (woken, skippedThrough)
    }

    /// The extension run an event is (nil for events with no entry point).
    static func runKind(of kind: StoredEvent.Kind) -> StoredExtensionRun.Event? {
        switch kind {
        case .finished: .finished
        case .failed: .failed
        case .needsCredentials: .challenge
        case .began, .paused, .progress, .waiting: nil
        }
    }

    /// What the extension's entry point is called with for `event`.
    private func runnerEvent(_ event: StoredEvent, _ download: StoredDownload) -> RunnerEvent? {
        let record = download.download
        switch event.change {
        case .finished(let destination, _):
            return .finished(record, filePath: destination)
        case .failed(let domain, let code, let message):
            return .failed(
                record, ErrorRecord(domain: domain, code: Int32(truncatingIfNeeded: code), message: message))
        case .needsCredentials(let challenge):
            return .challenge(record, Self.challengeRecord(url: download.url, challenge: challenge))
        case .began, .paused, .progress, .waiting:
            return nil
        }
    }

    /// The app's queue of acknowledgements.
    func acknowledgements(of app: String) -> StepQueue {
        if let queue = acknowledgements[app] { return queue }
        let queue = StepQueue()
        acknowledgements[app] = queue
        return queue
    }

    /// What `ok` calls did, applied after the acknowledgements before them: their events are
    /// delivered, except `finished` events whose file the extension did not move, which are
    /// kept for the app; credential answers go to their transfers, and their scheduled and
    /// cancelled downloads take effect.
    private func acknowledge(_ results: [BAExtensionRunResult], of app: StoredApp, woken: [WokenEvent]) {
        guard !results.isEmpty else { return }
        var work: [Acknowledging] = []
        for result in results {
            let event = woken[result.callIndex].event
            work.append(.effects(result, event))
            work += result.scheduled.map(Acknowledging.schedule)
            work.append(.delivered(event.sequence))
        }
        acknowledgements(of: app.bundleIdentifier).run { [self] done in
            applySlice(work[...], of: app, then: done)
        }
    }

    /// One step of acknowledging event calls, in order.
    enum Acknowledging {
        /// What the call did besides scheduling: keeping an unmoved file, a credential answer,
        /// cancellations.
        case effects(BAExtensionRunResult, StoredEvent)
        /// A download the call scheduled.
        case schedule(DownloadDescription)
        /// The call's event is delivered (with those before it).
        case delivered(Int64)
    }

    /// Applies the next slice of `work` in one transaction (at most ``ScheduleSlices/budget`` of
    /// work: a call may schedule 10,000 downloads, issue 19), the rest in later turns. A crash
    /// between slices leaves the event undelivered: the extension is called again, and what it
    /// scheduled before is refused as already scheduled. A failed write ends the work (the
    /// events stay undelivered and are handed over again).
    private func applySlice(_ work: ArraySlice<Acknowledging>, of app: StoredApp, then done: @escaping () -> Void) {
        var rest = work
        var removals: [String] = []
        var scheduled: [StoredDownload] = []
        var deliveredThrough: Int64?
        let started = ContinuousClock.now
        do {
            try store.batch("acknowledging events of \(app.bundleIdentifier)") {
                while let step = rest.first {
                    if rest.count < work.count, ContinuousClock.now - started >= ScheduleSlices.budget { break }
                    rest.removeFirst()
                    switch step {
                    case .effects(let result, let event):
                        applyEffects(result, of: app, event: event, removals: &removals)
                    case .schedule(let record):
                        do {
                            scheduled.append(
                                try transfers.schedule(
                                    record, for: app, contentRequest: 0, start: false))
                        } catch {
                            log(
                                "the extension of \(app.bundleIdentifier) scheduled \"\(record.identifier)\": "
                                    + "refused: \(error)")
                        }
                    case .delivered(let sequence):
                        deliveredThrough = sequence
                    }
                }
                // Not the parked events among them: those are the app's.
                if let deliveredThrough {
                    try store.markDelivered(
                        app: app.bundleIdentifier, through: deliveredThrough, includingParked: false)
                }
            }
        } catch {
            log("acknowledging events of \(app.bundleIdentifier) failed: \(error)")
            return done()
        }
        for download in scheduled { transfers.start(download) }
        for path in removals { removeDelivered(path) }
        guard !rest.isEmpty else { return done() }
        // A class, not a tuple holding the closure in `UncheckedSendable`: Swift 6.3.1 can free
        // a closure read out of such a tuple while it is still in use (seen in a test's fake).
        let carried = PendingAcknowledgement(rest: rest, done: done)
        executor.yielding { [self] in applySlice(carried.rest, of: app, then: carried.done) }
    }

    /// What is left of an acknowledgement between two turns of the executor (executor only).
    private final class PendingAcknowledgement: @unchecked Sendable {
        let rest: ArraySlice<Acknowledging>
        let done: () -> Void
        init(rest: ArraySlice<Acknowledging>, done: @escaping () -> Void) {
            self.rest = rest
            self.done = done
        }
    }

    /// What one `ok` call did besides scheduling, inside an acknowledging batch.
    private func applyEffects(
        _ result: BAExtensionRunResult, of app: StoredApp, event: StoredEvent, removals: inout [String]
    ) {
        switch event.change {
        case .finished(let destination, let expected):
            // Apple deletes a file the extension did not move. Here it is kept for the app: a move
            // that failed (Apple's sample's `replaceItemAt` on Linux, say) must not lose the file.
            // The app's delegate gets it on its next connection, and it is removed once the app
            // acknowledges it.
            if let size = Self.size(destination) {
                do {
                    // Parked for the app, as a poisoned event is: never handed to the extension
                    // again, holding nothing up, sent to the app's next connection.
                    try store.parkEvent(
                        app: app.bundleIdentifier, sequence: event.sequence,
                        reason: "the extension returned without moving the finished file; kept for the app")
                    log(
                        "the extension of \(app.bundleIdentifier) did not move the finished file \(destination): "
                            + "kept for the app's next connection")
                    if expected != size {
                        // Foundation's replaceItemAt on Linux moves the destination onto the new
                        // file's path: what is there now is not what was downloaded.
                        log(
                            "the file left at \(destination) is \(size) bytes, not the \(expected) downloaded: "
                                + "the extension replaced it (FileManager.replaceItemAt on Linux does); "
                                + "it goes to the app as it is")
                    }
                } catch {
                    log("could not keep \(destination) for \(app.bundleIdentifier): \(error); removing it")
                    removals.append(destination)
                }
            }
        case .needsCredentials:
            transfers.respond(
                to: event.downloadUniqueIdentifier, disposition: Int(result.challengeDisposition ?? 1),
                user: result.credential?.user, password: result.credential?.password)
        default:
            break
        }
        transfers.applyCancellations(result.cancelled, of: app.bundleIdentifier)
    }

    /// The size of what is at `path` (a file, or a link the extension left), or nil when nothing is.
    static func size(_ path: String) -> Int64? {
        var info = stat()
        // A self-hosted asset pack's `finished` names the pack's link in the container: no file
        // to move, keep or remove.
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG ? Int64(info.st_size) : nil
    }

    /// The protection space of a `WWW-Authenticate` challenge for `url` (the same reading the
    /// app's delegate gets: ``ChallengeHeader``).
    static func challengeRecord(url: String, challenge: String) -> ChallengeRecord {
        let parsed = URLComponents(string: url)
        let scheme = parsed?.scheme?.lowercased() ?? "https"
        let header = ChallengeHeader(challenge)
        return ChallengeRecord(
            host: parsed?.host ?? "", port: Int32(parsed?.port ?? (scheme == "http" ? 80 : 443)),
            protocolName: scheme, realm: header.realm ?? "", authenticationMethod: header.authenticationMethod,
            previousFailureCount: 0)
    }
}
