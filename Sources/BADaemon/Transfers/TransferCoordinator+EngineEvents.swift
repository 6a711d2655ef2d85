import BACore
import BADaemonProtocol
import BADownloadEngine
import BAHashing
import BAStore
import Foundation

// The engine's events, recorded in the store and handed to the event router (executor).
extension TransferCoordinator {
    /// Handles events of the engine, in order: manifest fetches go to their callers, transfers out
    /// of space wait, and the rest is recorded in one transaction, whose events then go to the
    /// event router. Returns how long that transaction's commit took (its fsync; zero when
    /// nothing was recorded), which ``handleArriving()`` leaves out of the turn's size.
    @discardableResult
    func handle(_ events: [EngineEvent]) -> Duration {
        var toStore: [EngineEvent] = []
        // Once a quarter of the window has ended, the next queued downloads go to the engine.
        defer { perform(window.handle(.eventsHandled)) }
        // Transient `waiting` events go to the observers after the batch's recorded events (its
        // `began` first), in the order they came.
        var waitingEvents: [WireEvent] = []
        defer { for event in waitingEvents { delegate?.transfers(self, waiting: event) } }
        for event in events {
            switch event {
            case .serverWaiting(let server, let reason, let next, let waiting):
                serverWaiting(server, reason: reason, nextProbeIn: next, waiting: waiting)
                continue
            case .serverAnswered(let server, let released, let downFor):
                serverAnswered(server, released: released, downFor: downFor)
                continue
            default: break
            }
            if event.id.hasPrefix("manifest:") || event.id.hasPrefix("pack:") {
                noteSideFetch(event)
                sideFetches[event.id]?(event)
                continue
            }
            // What the window learns needs no store write, so it is not held behind events the
            // store could not record yet.
            switch event {
            case .began(let id, let offset, let isForeground):
                perform(window.handle(.began(id)))
                if waitingToRetry.remove(id) != nil {
                    // The next attempt after a retry wait: not a new beginning (no `began` event).
                    recordRetryAttempt(id, offset: offset, isForeground: isForeground)
                    continue
                }
            case .retrying(let id, let attempt, let delay, let reason):
                log("download \(id): attempt \(attempt) failed (\(reason)); retrying in \(LogDuration.text(delay))")
                let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
                let until = clock.now.addingTimeInterval(seconds)
                perform(window.handle(.retrying(id, .init(reason: reason, until: until))))
                waitingToRetry.insert(id)
                if let event = waitingEvent(id, attempt: attempt, reason: reason, until: until) {
                    waitingEvents.append(event)
                }
                // Nothing to record: the wait shows in listings while it lasts.
                continue
            case .failed(let id, let error) where error.code == .noSpace:
                // A transfer out of space waits.
                progress[id] = nil
                waitForSpace(id, error)
                continue
            case .finished(let id, _, _, _, _), .failed(let id, _):
                waitingToRetry.remove(id)
                perform(window.handle(.ended(id)))
            case .paused(let id, _):
                // Resumed later with a `began` the app hears (Apple's didBegin after didPause).
                waitingToRetry.remove(id)
                perform(window.handle(.paused(id)))
            case .progress, .validator, .needsCredentials, .serverWaiting, .serverAnswered:
                break
            }
            toStore.append(event)
        }
        guard !toStore.isEmpty else { return .zero }
        Self.dropSuperseded(&toStore)
        // Events the store could not record yet go first, in order.
        guard unrecorded.isEmpty else {
            unrecorded += toStore
            return .zero
        }
        guard let commit = recordBatch(toStore) else {
            unrecorded += toStore
            perform(window.handle(.storeRefused))
            return .zero
        }
        return commit
    }

    private struct StoreRefused: Error {}

    /// A transfer's next attempt after a retry wait began: the download's row counts it, and no
    /// event is appended (its `began` was told when the download began).
    private func recordRetryAttempt(_ id: String, offset: Int64, isForeground: Bool) {
        progress[id] = ProgressMark(recordedAt: clock.instant, bytes: offset)
        do {
            try store.recordRetryAttempt(uniqueIdentifier: id, offset: offset, isForeground: isForeground)
        } catch  where error.code == .unknownDownload || error.code == .downloadEnded {
            // Cancelled or ended meanwhile: nothing to record.
        } catch {
            log("recording the next attempt of download \(id) failed: \(error)")
        }
    }

    /// The transient `waiting` event of a transfer whose attempt failed, for the CLI observers
    /// (`ba events`); nil when nobody listens or the download is gone.
    private func waitingEvent(_ id: String, attempt: Int, reason: String, until: Date) -> WireEvent? {
        guard delegate?.transfersHaveProgressListeners(self) == true,
            let download = try? store.download(uniqueIdentifier: id)
        else { return nil }
        return WireEvent(
            sequence: 0, downloadUniqueIdentifier: id, identifier: download.identifier,
            change: .waiting(
                reason: reason, retryAt: Int64((until.timeIntervalSince1970 * 1000).rounded()), attempt: attempt),
            appIdentifier: download.appIdentifier)
    }

    /// Drops the validators and progress of transfers that finish later in the same batch: the
    /// finished record supersedes them (a validator is kept only to resume a partial file, and
    /// the app's delegate hears of the whole file). A small file's began, validator, progress and
    /// finished are then two records, not four.
    static func dropSuperseded(_ events: inout [EngineEvent]) {
        var finishing: Set<String> = []
        for event in events { if case .finished(let id, _, _, _, _) = event { finishing.insert(id) } }
        guard !finishing.isEmpty else { return }
        events.removeAll { event in
            switch event {
            case .validator(let id, _), .progress(let id, _, _): finishing.contains(id)
            default: false
            }
        }
    }

    /// Records `events` in one transaction (one fsync), then tells the event router; returns how
    /// long the commit took, or nil (and nothing stored) when the store could not be written.
    private func recordBatch(_ events: [EngineEvent]) -> Duration? {
        // What to do once the batch is committed (tell the event router, send transient progress), in order.
        var afterCommit: [() -> Void] = []
        var bodyEnded = ContinuousClock.now
        do {
            try store.batch("recording \(events.count) engine event(s)") {
                for event in events where !record(event, afterCommit: &afterCommit) { throw StoreRefused() }
                bodyEnded = .now
            }
        } catch {
            if unrecorded.isEmpty {
                log("recording \(events.count) engine event(s) failed, kept to be recorded later: \(error)")
            }
            return nil
        }
        let commit = ContinuousClock.now - bodyEnded
        for action in afterCommit { action() }
        return commit
    }

    /// Records one engine event; false when the store could not be written (the event is to be
    /// recorded later). Late events of a cancelled or ended download are dropped.
    private func record(_ event: EngineEvent, afterCommit: inout [() -> Void]) -> Bool {
        do {
            switch event {
            case .began(let id, let offset, let isForeground):
                progress[id] = ProgressMark(recordedAt: clock.instant, bytes: offset)
                try recorded(
                    store.recordBegan(uniqueIdentifier: id, offset: offset, isForeground: isForeground),
                    into: &afterCommit)
            case .paused(let id, let bytesOnDisk):
                try recorded(store.recordPaused(uniqueIdentifier: id, bytesOnDisk: bytesOnDisk), into: &afterCommit)
            case .progress(let id, let bytesWritten, let totalBytes):
                let now = clock.instant
                var mark = progress[id] ?? ProgressMark(recordedAt: now)
                mark.bytes = bytesWritten
                mark.totalBytes = totalBytes
                if now - mark.recordedAt >= configuration.progressRecordInterval {
                    try recorded(
                        store.recordProgress(uniqueIdentifier: id, bytesOnDisk: bytesWritten, totalBytes: totalBytes),
                        into: &afterCommit)
                    mark.recordedAt = now
                    progress[id] = mark
                } else {
                    progress[id] = mark
                    try transientProgress(id, bytesWritten: bytesWritten, totalBytes: totalBytes, into: &afterCommit)
                }
            case .validator(let id, let value):
                // What a restarted basd needs to resume: recorded at once.
                let mark = progress[id] ?? ProgressMark(recordedAt: clock.instant)
                try recorded(
                    store.recordProgress(
                        uniqueIdentifier: id, bytesOnDisk: mark.bytes, totalBytes: mark.totalBytes, validator: value),
                    into: &afterCommit)
                progress[id]?.recordedAt = clock.instant
            case .retrying, .serverWaiting, .serverAnswered:
                // Taken by the window when it arrived (``handle(_:)``): nothing to record.
                break
            case .needsCredentials(let id, let challenge):
                try recorded(
                    store.recordNeedsCredentials(uniqueIdentifier: id, challenge: challenge), into: &afterCommit)
            case .finished(let id, let path, let size, let sha256, _):
                let event = try store.markFinished(uniqueIdentifier: id, destination: path, size: size)
                progress[id] = nil
                // A pack's folder is no file to purge: the pack service owns it.
                if !packDownloads.contains(id) {
                    delegate?.transfers(self, finished: event, path: path, sha256: sha256)
                }
                recorded(event, into: &afterCommit)
            case .failed(let id, let error):
                progress[id] = nil
                guard error.code != .cancelled else { return true }
                try recorded(
                    store.markFailed(uniqueIdentifier: id, error: DownloadFailure.stored(error)), into: &afterCommit)
            }
        } catch let error as BAStoreError where error.code == .unknownDownload || error.code == .downloadEnded {
            // A late event of a cancelled or ended download: nothing to record.
        } catch let error as BAStoreError where error.code == .database {
            if unrecorded.isEmpty { log("recording \(event) failed: \(error)") }
            return false
        } catch {
            log("recording \(event) failed: \(error)")
        }
        return true
    }

    /// An event was appended: the event router takes it once its batch is committed.
    private func recorded(_ event: StoredEvent, into afterCommit: inout [() -> Void]) {
        afterCommit.append { [self] in delegate?.transfers(self, recorded: event) }
    }

    /// Progress between two durable records: pushed to whoever listens now, never stored.
    private func transientProgress(
        _ id: String, bytesWritten: Int64, totalBytes: Int64?, into afterCommit: inout [() -> Void]
    ) throws {
        guard delegate?.transfersHaveProgressListeners(self) == true else { return }
        // Read once per transfer, not for every progress tick (cancel and the end drop the mark).
        if progress[id]?.download == nil { progress[id]?.download = try store.download(uniqueIdentifier: id) }
        guard let download = progress[id]?.download, download.state.isActive else { return }
        // After the batch, so it never goes out before an event recorded ahead of it.
        afterCommit.append { [self] in
            delegate?.transfers(self, progressOf: download, bytesWritten: bytesWritten, totalBytes: totalBytes)
        }
    }

    // MARK: - No space, no store

    /// The transfer stopped for want of space: it keeps its partial file and waits, visibly,
    /// until the file system has more room than now.
    func waitForSpace(_ id: String, _ error: DownloadError) {
        let free = (try? configuration.freeSpace(containers.groupsDirectory)) ?? 0
        if case .inEngine = window.place(of: id) {
            log("download \(id) waits for disk space: \(error.message)")
        }
        perform(window.handle(.outOfSpace(id, freeBytes: free)))
    }

    /// The look armed after ``BasdServices/Configuration/spaceRetryInterval``: records what the
    /// store refused before (in order, stopping at the first that fails again), then starts the
    /// transfers that wait for space if there is more room now.
    func lookAgain() {
        if !unrecorded.isEmpty, recordBatch(unrecorded) != nil { unrecorded.removeAll() }
        perform(window.handle(.lookAgainDue(storeBlocked: !unrecorded.isEmpty)))
    }

    // MARK: - A file already complete

    /// Whether an active download's file is already complete at its destination (basd died
    /// between renaming it into place and recording that): then it is recorded finished, without
    /// fetching it again. The file must have no partial file beside it and match what is known of
    /// it: its SHA-256 when one was given, else its declared size, else the bytes recorded so far
    /// and a validator (the server's version of it).
    func recognizeCompleteFile(_ download: StoredDownload) -> Bool {
        guard download.applicationGroupIdentifier != nil, !download.download.isAssetPack else { return false }
        let path = destination(of: download)
        // Not followed: a link an extension planted under the finished file's name is no file.
        guard let size = RegularFile.sizeWithoutFollowing(path), size > 0 else { return false }
        if let partialSize = RegularFile.sizeWithoutFollowing(partialPath(of: download)), partialSize > 0 {
            return false
        }
        let complete: Bool
        if let sha256 = download.sha256 {
            complete = (try? SHA256Hasher.hex(ofFileAt: path)) == sha256.lowercased()
        } else if let expected = download.expectedSize {
            complete = size == expected
        } else {
            complete = download.validator != nil && download.bytesOnDisk <= size
        }
        guard complete else { return false }
        do {
            let event = try store.markFinished(
                uniqueIdentifier: download.uniqueIdentifier, destination: path, size: size)
            log("download \(download.uniqueIdentifier) was already complete at \(path); recorded finished")
            delegate?.transfers(self, finished: event, path: path, sha256: download.sha256 ?? "")
            delegate?.transfers(self, recorded: event)
            return true
        } catch {
            log("recording the complete file of \(download.uniqueIdentifier) failed: \(error)")
            return false
        }
    }
}
