import BADaemonProtocol
import BAExtensionHost
import BAExtensionProtocol
import BAStore
import Foundation

// Events nobody is listening for, handed to the app's extension (executor).
extension EventRouter {
    /// Calls the extension of `app` for the event `sequence`; the call's end feeds the machine.
    func wake(_ app: String, sequence: Int64) {
        do {
            guard let storedApp = try store.app(app), let libraryPath = storedApp.extensionPath,
                let event = try store.undeliveredEvents(app: app, after: sequence - 1, limit: 1).first,
                event.sequence == sequence
            else {
                // Gone meanwhile (delivered, or the app re-registered without an extension).
                feed(app, .eventCallEnded(sequence: sequence, ok: true))
                return
            }
            guard let download = try store.download(uniqueIdentifier: event.downloadUniqueIdentifier) else {
                try store.markDelivered(app: app, through: sequence)
                feed(app, .eventCallEnded(sequence: sequence, ok: true))
                return
            }
            let details = EventDetails(event)
            let record = DownloadRecord(download)
            let runnerEvent: RunnerEvent
            let runKind: StoredExtensionRun.Event
            switch event.kind {
            case .finished:
                runnerEvent = .finished(record, filePath: details.destination ?? download.destinationPath ?? "")
                runKind = .finished
            case .failed:
                runnerEvent = .failed(
                    record,
                    ErrorRecord(
                        domain: details.domain ?? "", code: Int32(truncatingIfNeeded: details.code ?? 0),
                        message: details.message ?? ""))
                runKind = .failed
            default:
                runnerEvent = .challenge(
                    record, Self.challengeRecord(url: download.url, challenge: details.challenge ?? ""))
                runKind = .challenge
            }
            services.extensions.call(
                storedApp, libraryPath: libraryPath, event: runnerEvent, kind: runKind, bypassAllowance: false
            ) { [self] outcome in
                if case .ran(let result) = outcome, result.verdict == .ok {
                    apply(result, of: storedApp, event: event)
                }
                if !outcome.isOK {
                    log("the extension of \(app) ended \(outcome.verdictName) handling event \(sequence)")
                }
                feed(app, .eventCallEnded(sequence: sequence, ok: outcome.isOK))
            }
        } catch {
            log("waking the extension of \(app) for event \(sequence) failed: \(error)")
            feed(app, .eventCallEnded(sequence: sequence, ok: false))
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
            if let destination = EventDetails(event).destination { removeDelivered(destination) }
        case .needsCredentials:
            services.transfers.respond(
                to: event.downloadUniqueIdentifier, disposition: Int(result.challengeDisposition ?? 1),
                user: result.credential?.user, password: result.credential?.password)
        default:
            break
        }
        services.transfers.applyCancellations(result.cancelled, of: app.bundleIdentifier)
        for record in result.scheduled {
            do {
                try services.transfers.schedule(DownloadPayload(record), for: app, contentRequest: 0)
            } catch {
                log("the extension of \(app.bundleIdentifier) scheduled \"\(record.identifier)\": refused: \(error)")
            }
        }
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
