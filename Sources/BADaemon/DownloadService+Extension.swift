import BADaemonProtocol
import BAExclusiveControl
import BAExtensionHost
import BAExtensionProtocol
import BAStore
import Foundation

// Events nobody is listening for, handed to the app's extension (service queue).
extension DownloadService {
    /// Walks the app's undelivered events in order: `began`/`paused`/`progress` have no extension
    /// entry point and are dropped (acknowledged); the first `finished`/`failed`/`needsCredentials`
    /// wakes the extension, and the walk continues when that call ends. Without an extension (or
    /// after ``Configuration/extensionAttempts`` failed calls for one event), the events stay for
    /// the app's next connection.
    func deliverToExtension(_ app: String) {
        guard !extensionBusy.contains(app) else { return }
        do {
            guard let storedApp = try store.app(app) else { return }
            let events = try store.undeliveredEvents(app: app, limit: 256)
            for event in events {
                switch event.kind {
                case .began, .paused, .progress:
                    try store.markDelivered(app: app, through: event.sequence)
                case .finished, .failed, .needsCredentials:
                    guard let libraryPath = storedApp.extensionPath, let supervisor else {
                        if event.kind == .needsCredentials {
                            // Nobody can answer: fail the transfer rather than hang it.
                            respond(to: event.downloadUniqueIdentifier, disposition: 2, user: nil, password: nil)
                        }
                        return
                    }
                    guard extensionFailures[event.sequence, default: 0] < configuration.extensionAttempts else {
                        return
                    }
                    if let reason = refusalToCall(storedApp, kind: nil, bypassAllowance: false) {
                        // Kept for the app, or for a later try (the scheduler retries held-back apps).
                        if heldBack.insert(app).inserted {
                            log("events of \(app) wait: not waking its extension: \(reason)")
                        }
                        return
                    }
                    heldBack.remove(app)
                    guard let download = try store.download(uniqueIdentifier: event.downloadUniqueIdentifier) else {
                        try store.markDelivered(app: app, through: event.sequence)
                        continue
                    }
                    wake(storedApp, libraryPath: libraryPath, supervisor: supervisor, event: event, download: download)
                    return
                }
            }
            if events.count == 256 { queue.async { self.pump(app) } }
        } catch {
            log("routing the events of \(app) to its extension failed: \(error)")
        }
    }

    private func wake(
        _ app: StoredApp, libraryPath: String, supervisor: BAExtensionSupervisor, event: StoredEvent,
        download: StoredDownload
    ) {
        let fields = Self.fields(event)
        let record = record(download)
        let runnerEvent: RunnerEvent
        let runKind: StoredExtensionRun.Event
        switch event.kind {
        case .finished:
            runnerEvent = .finished(record, filePath: fields.destination ?? download.destinationPath ?? "")
            runKind = .finished
        case .failed:
            runnerEvent = .failed(
                record,
                ErrorRecord(
                    domain: fields.domain ?? "", code: Int32(truncatingIfNeeded: fields.code ?? 0),
                    message: fields.message ?? ""))
            runKind = .failed
        default:
            runnerEvent = .challenge(record, Self.challengeRecord(url: download.url, challenge: fields.challenge ?? ""))
            runKind = .challenge
        }
        let current = (try? store.downloads(app: app.bundleIdentifier).filter { $0.state.isActive }.map(self.record))
        let invocation = BAExtensionInvocation(
            libraryPath: libraryPath, event: runnerEvent, timeout: callTimeout(for: app, bypassAllowance: false),
            appGroupContainerPath: app.appGroupIdentifier.map { containers.container(group: $0) },
            currentDownloads: current ?? [])
        extensionBusy.insert(app.bundleIdentifier)
        eventInExtension[app.bundleIdentifier] = event.sequence
        let startedAt = Date()
        let thread = Thread { [self] in
            let outcome = Result<BAExtensionRunResult, BAExtensionHostError>(catching: {
                () throws(BAExtensionHostError) in try supervisor.runBlocking(invocation)
            })
            queue.async { self.woken(app, event: event, kind: runKind, startedAt: startedAt, outcome: outcome) }
        }
        thread.name = "basd-extension-call"
        thread.start()
    }

    private func woken(
        _ app: StoredApp, event: StoredEvent, kind: StoredExtensionRun.Event, startedAt: Date,
        outcome: Result<BAExtensionRunResult, BAExtensionHostError>
    ) {
        eventInExtension[app.bundleIdentifier] = nil
        let verdict: String
        var detail: String?
        var milliseconds: Int64 = 0
        switch outcome {
        case .success(let result):
            verdict = result.verdict.name
            detail = result.verdict.detail
            milliseconds = Self.milliseconds(result.duration)
            for line in result.logs { log("[\(app.bundleIdentifier) extension] \(line.message)") }
            if result.verdict == .ok {
                apply(result, of: app, event: event)
            }
        case .failure(let error):
            verdict = "hostError"
            detail = error.message
        }
        _ = try? store.recordExtensionRun(
            StoredExtensionRun(
                appIdentifier: app.bundleIdentifier, event: kind, verdict: verdict, detail: detail,
                startedAt: startedAt, durationMilliseconds: milliseconds))
        var outcomeVerdict: BAExtensionVerdict?
        if case .success(let result) = outcome { outcomeVerdict = result.verdict }
        extensionRan(
            app, verdict: outcomeVerdict, hostError: outcomeVerdict == nil ? detail : nil,
            duration: TimeInterval(milliseconds) / 1000)
        if verdict == "ok" {
            extensionFailures[event.sequence] = nil
            extensionFreed(app.bundleIdentifier)
        } else {
            extensionFreed(app.bundleIdentifier, routeEvents: false)
            let failures = extensionFailures[event.sequence, default: 0] + 1
            extensionFailures[event.sequence] = failures
            if failures < configuration.extensionAttempts {
                log("the extension of \(app.bundleIdentifier) ended \(verdict) handling event \(event.sequence); retrying")
                queue.asyncAfter(deadline: .now() + .milliseconds(200 * failures)) { self.pump(app.bundleIdentifier) }
            } else {
                log(
                    "the extension of \(app.bundleIdentifier) failed \(failures) times on event \(event.sequence) "
                        + "(\(verdict)); keeping it for the app's next connection")
                // An app that connected during the call was sent nothing meanwhile: it gets it now.
                if subscribers[app.bundleIdentifier] != nil { pump(app.bundleIdentifier) }
            }
        }
    }

    /// What an `ok` call did: the event is delivered (a finished file the extension did not move
    /// is removed), its credential answer goes to the transfer, and its scheduled and cancelled
    /// downloads take effect.
    private func apply(_ result: BAExtensionRunResult, of app: StoredApp, event: StoredEvent) {
        do {
            try store.markDelivered(app: app.bundleIdentifier, through: event.sequence)
        } catch {
            log("acknowledging event \(event.sequence) of \(app.bundleIdentifier) failed: \(error)")
        }
        switch event.kind {
        case .finished:
            if let destination = Self.fields(event).destination { removeDelivered(destination) }
        case .needsCredentials:
            respond(
                to: event.downloadUniqueIdentifier, disposition: Int(result.challengeDisposition ?? 1),
                user: result.credential?.user, password: result.credential?.password)
        default:
            break
        }
        applyCancellations(result.cancelled, of: app.bundleIdentifier)
        for record in result.scheduled {
            let payload = DownloadPayload(
                identifier: record.identifier, uniqueIdentifier: record.uniqueIdentifier, url: record.url,
                headers: record.headers, applicationGroupIdentifier: record.applicationGroupIdentifier,
                priority: record.priority, isEssential: record.isEssential,
                fileSize: record.fileSize > 0 ? record.fileSize : nil, sha256: record.sha256)
            do {
                try schedule(payload, for: app, contentRequest: 0)
            } catch {
                log("the extension of \(app.bundleIdentifier) scheduled \"\(record.identifier)\": refused: \(error)")
            }
        }
    }

    /// Cancels what an extension's `ok` call cancelled through `BADownloadManager.cancel` (an event
    /// wake or a content request); returns the identifiers cancelled. One that ended meanwhile is
    /// logged and skipped.
    @discardableResult
    func applyCancellations(_ identifiers: [String], of app: String) -> [String] {
        var cancelled: [String] = []
        for identifier in identifiers {
            do {
                try cancel(app: app, identifier: identifier)
                cancelled.append(identifier)
                log("the extension of \(app) cancelled \"\(identifier)\"")
            } catch {
                log("the extension of \(app) cancelled \"\(identifier)\": \(error)")
            }
        }
        return cancelled
    }

    /// The protection space of a `WWW-Authenticate` challenge for `url`.
    static func challengeRecord(url: String, challenge: String) -> ChallengeRecord {
        let parsed = URLComponents(string: url)
        let scheme = parsed?.scheme ?? "https"
        let method = challenge.prefix { $0 != " " }.lowercased()
        var realm = ""
        if let range = challenge.range(of: "realm=\"") {
            realm = String(challenge[range.upperBound...].prefix { $0 != "\"" })
        }
        return ChallengeRecord(
            host: parsed?.host ?? "", port: Int32(parsed?.port ?? (scheme == "http" ? 80 : 443)),
            protocolName: scheme, realm: realm,
            authenticationMethod: method == "digest"
                ? "NSURLAuthenticationMethodHTTPDigest" : "NSURLAuthenticationMethodHTTPBasic",
            previousFailureCount: 0)
    }
}
