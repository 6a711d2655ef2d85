import BADaemonProtocol
import BADownloadEngine
import BAExtensionProtocol
import BAStore
import Foundation

typealias EngineEvent = BADownloadEngine.DownloadEvent
typealias WireEvent = BADaemonProtocol.DownloadEvent

// The engine's events, recorded and routed (all on the service queue).
extension DownloadService {
    func handle(_ event: EngineEvent) {
        if event.id.hasPrefix("manifest:") {
            manifestFetches[event.id]?(event)
            return
        }
        do {
            switch event {
            case .began(let id, let offset, let isForeground):
                progress[id] = ProgressMark(recordedAt: .now, bytes: offset)
                try recorded(store.recordBegan(uniqueIdentifier: id, offset: offset, isForeground: isForeground))
            case .paused(let id, let bytesOnDisk):
                try recorded(store.recordPaused(uniqueIdentifier: id, bytesOnDisk: bytesOnDisk))
            case .progress(let id, let bytesWritten, let totalBytes):
                var mark = progress[id] ?? ProgressMark(recordedAt: .now)
                mark.bytes = bytesWritten
                mark.totalBytes = totalBytes
                if ContinuousClock.now - mark.recordedAt >= configuration.progressRecordInterval {
                    mark.recordedAt = .now
                    progress[id] = mark
                    try recorded(
                        store.recordProgress(uniqueIdentifier: id, bytesOnDisk: bytesWritten, totalBytes: totalBytes))
                } else {
                    progress[id] = mark
                    try transientProgress(id, bytesWritten: bytesWritten, totalBytes: totalBytes)
                }
            case .validator(let id, let value):
                // What a restarted basd needs to resume: recorded at once.
                let mark = progress[id] ?? ProgressMark(recordedAt: .now)
                progress[id]?.recordedAt = .now
                try recorded(
                    store.recordProgress(
                        uniqueIdentifier: id, bytesOnDisk: mark.bytes, totalBytes: mark.totalBytes, validator: value))
            case .retrying(let id, let attempt, let delay, let reason):
                log("download \(id): attempt \(attempt) failed (\(reason)); retrying in \(delay)")
            case .needsCredentials(let id, let challenge):
                try recorded(store.recordNeedsCredentials(uniqueIdentifier: id, challenge: challenge))
            case .finished(let id, let path, let size, let sha256, _):
                progress[id] = nil
                let event = try store.markFinished(uniqueIdentifier: id, destination: path, size: size)
                track(finished: event, path: path, sha256: sha256)
                recorded(event)
            case .failed(let id, let error):
                progress[id] = nil
                guard error.code != .cancelled else { return }
                try recorded(store.markFailed(uniqueIdentifier: id, error: Self.failure(error)))
            }
        } catch let error as BAStoreError where error.code == .unknownDownload || error.code == .downloadEnded {
            // A late event of a cancelled or ended download: nothing to record.
        } catch {
            log("recording \(event) failed: \(error)")
        }
    }

    /// Starts tracking a finished file for purging (by its identity now: an app that moves it
    /// within the container keeps the inode).
    func track(finished event: StoredEvent, path: String, sha256: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        do {
            guard let download = try store.download(uniqueIdentifier: event.downloadUniqueIdentifier) else { return }
            try store.recordAsset(
                StoredAsset(
                    downloadUniqueIdentifier: download.uniqueIdentifier, appIdentifier: download.appIdentifier,
                    identifier: download.identifier, deliveredPath: path, device: UInt64(info.st_dev),
                    inode: UInt64(info.st_ino), size: Int64(info.st_size),
                    modificationTimeNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
                    sha256: sha256.isEmpty ? (download.sha256 ?? "") : sha256, finishedAt: Date()))
        } catch {
            log("tracking the finished file \(path) failed: \(error)")
        }
    }

    /// How an engine failure reaches the app: Apple's domain and codes where Apple has one
    /// (`docs/downloads.md`), `NSURLErrorDomain` codes for transport failures.
    static func failure(_ error: DownloadError) -> StoredDownload.Failure {
        let background = "com.apple.backgroundassets.error"
        let url = "NSURLErrorDomain"
        let (domain, code): (String, Int) =
            switch error.code {
            case .notAllowed: (background, 202)  // sessionDownloadDisallowedByDomain
            case .sizeMismatch, .checksumMismatch: (background, 0)  // downloadInvalid
            case .allowanceDisallowed: (background, 203)  // sessionDownloadDisallowedByAllowance
            case .allowanceExceeded: (background, 204)  // sessionDownloadAllowanceExceeded
            case .serverStatus: (url, -1011)  // NSURLErrorBadServerResponse
            case .tls: (url, -1200)  // NSURLErrorSecureConnectionFailed
            case .authentication: (url, -1013)  // NSURLErrorUserAuthenticationRequired
            case .redirect: (url, -1007)  // NSURLErrorHTTPTooManyRedirects
            case .retriesExhausted: (url, -1001)  // NSURLErrorTimedOut
            case .fileSystem: (url, -3001)  // NSURLErrorCannotOpenFile
            case .cancelled: (url, -999)  // NSURLErrorCancelled
            default: (url, -1005)  // NSURLErrorNetworkConnectionLost
            }
        return StoredDownload.Failure(domain: domain, code: code, message: error.message)
    }

    /// A durable event was appended: tell the CLI watchers and route it to the app.
    private func recorded(_ event: StoredEvent) {
        if !observers.isEmpty, let wire = try? wireEvent(event, forApp: false) {
            for observer in observers.values { observer.send(.event(wire)) }
        }
        pump(event.appIdentifier)
    }

    /// Progress between two durable records: pushed to whoever listens now, never stored.
    private func transientProgress(_ id: String, bytesWritten: Int64, totalBytes: Int64?) throws {
        guard !observers.isEmpty || !subscribers.isEmpty else { return }
        // Read once per transfer, not for every progress tick (cancel and the end drop the mark).
        if progress[id]?.download == nil { progress[id]?.download = try store.download(uniqueIdentifier: id) }
        guard let download = progress[id]?.download, download.state.isActive else { return }
        var event = WireEvent(sequence: 0, downloadUniqueIdentifier: id, identifier: download.identifier, kind: .progress)
        event.bytesWritten = bytesWritten
        event.totalBytes = totalBytes
        event.appIdentifier = download.appIdentifier
        for observer in observers.values { observer.send(.event(event)) }
        event.download = payload(download)
        for session in (subscribers[download.appIdentifier] ?? [:]).values { session.send(.event(event)) }
    }

    // MARK: - Subscribers

    func subscribe(_ session: Session, client: ClientInfo) {
        guard !session.subscribed else { return }
        session.subscribed = true
        if client.role == .cli {
            observers[session.id] = session
        } else if let app = client.bundleIdentifier {
            subscribers[app, default: [:]][session.id] = session
            // After the `ok` reply (the caller writes it first): the backlog, in order.
            queue.async { self.pump(app) }
        }
    }

    func sessionClosed(_ session: Session) {
        observers[session.id] = nil
        guard let app = session.client?.bundleIdentifier, subscribers[app]?[session.id] != nil else { return }
        subscribers[app]?[session.id] = nil
        if subscribers[app]?.isEmpty == true {
            subscribers[app] = nil
            // No app listens any more: what it did not acknowledge goes to its extension.
            pump(app)
        }
    }

    /// Sends the app's undelivered events to its subscribed connections, or, when none is
    /// subscribed, hands them to its extension. While the extension handles one of them, the app
    /// waits: each event goes to one of the two, in order (the end of that call pumps again).
    func pump(_ app: String) {
        guard let sessions = subscribers[app], !sessions.isEmpty else {
            deliverToExtension(app)
            return
        }
        guard eventInExtension[app] == nil else { return }
        for session in sessions.values {
            do {
                while true {
                    let events = try store.undeliveredEvents(app: app, after: session.lastSentSequence, limit: 256)
                    for event in events {
                        session.send(.event(try wireEvent(event, forApp: true)))
                        session.lastSentSequence = event.sequence
                    }
                    if events.count < 256 { break }
                }
            } catch {
                log("sending events to \(app) failed: \(error)")
            }
        }
    }

    /// The app handled its events through `sequence`: they are delivered, and finished files it
    /// did not move are removed.
    func acknowledge(app: String, through sequence: Int64) throws {
        // The undelivered events up to `sequence`, a page at a time (they are in sequence order).
        var handled: [StoredEvent] = []
        var after: Int64 = 0
        while after < sequence {
            let page = try store.undeliveredEvents(app: app, after: after, limit: 256)
            handled += page.prefix { $0.sequence <= sequence }.filter { $0.kind == .finished }
            guard let last = page.last, last.sequence < sequence, page.count == 256 else { break }
            after = last.sequence
        }
        try store.markDelivered(app: app, through: sequence)
        for event in handled {
            if let destination = Self.fields(event).destination { removeDelivered(destination) }
        }
    }

    /// Removes a delivered file the receiver left in place.
    func removeDelivered(_ path: String) {
        if unlink(path) != 0 && errno != ENOENT {
            log("could not remove the delivered file \(path): \(String(cString: strerror(errno)))")
        }
    }

    // MARK: - Wire events

    /// The fields of a stored event's JSON payload (each kind sets its own).
    struct PayloadFields: Decodable {
        var offset: Int64?
        var isForeground: Bool?
        var bytesOnDisk: Int64?
        var bytesWritten: Int64?
        var totalBytes: Int64?
        var destination: String?
        var size: Int64?
        var domain: String?
        var code: Int?
        var message: String?
        var challenge: String?
    }

    static func fields(_ event: StoredEvent) -> PayloadFields {
        (try? JSONDecoder().decode(PayloadFields.self, from: Data(event.payload.utf8)))
            ?? PayloadFields()
    }

    func wireEvent(_ event: StoredEvent, forApp: Bool) throws -> WireEvent {
        let download = try store.download(uniqueIdentifier: event.downloadUniqueIdentifier)
        let kind = WireEvent.Kind(rawValue: event.kind.rawValue) ?? .progress
        var wire = WireEvent(
            sequence: event.sequence, downloadUniqueIdentifier: event.downloadUniqueIdentifier,
            identifier: download?.identifier ?? "", kind: kind)
        let fields = Self.fields(event)
        wire.offset = fields.offset
        wire.isForeground = fields.isForeground
        wire.bytesOnDisk = fields.bytesOnDisk
        wire.bytesWritten = fields.bytesWritten
        wire.totalBytes = fields.totalBytes
        wire.destination = fields.destination
        wire.size = fields.size
        wire.errorDomain = fields.domain
        wire.errorCode = fields.code
        wire.errorMessage = fields.message
        wire.challenge = fields.challenge
        if forApp {
            wire.download = download.map(payload)
        } else {
            wire.appIdentifier = event.appIdentifier
        }
        return wire
    }
}
