internal import BADaemonProtocol
import Foundation

/// Where basd's asset-pack events for this app go in the process: the status-update sequences
/// listening, and the `ensureLocalAvailability` calls waiting for a pack to finish.
///
/// Threads: events arrive on the connection's reader thread; sequences and waiters register
/// from any thread. Everything is under one lock, held briefly; continuations are resumed and
/// streams fed outside it.
final class PackEventHub: @unchecked Sendable {
    /// How a wait for a pack ended.
    enum Outcome: Sendable {
        case finished
        case failed(PackFailure)
        /// The connection to basd ended: ask again on a new one.
        case connectionLost
    }

    private struct Listener {
        var pack: String?
        var continuation: AsyncStream<AssetPackManager.DownloadStatusUpdate>.Continuation
    }

    private let lock = NSLock()
    private var nextID: UInt64 = 0
    private var listeners: [UInt64: Listener] = [:]
    private var waiters: [UInt64: (pack: String, resume: @Sendable (Outcome) -> Void)] = [:]
    /// The latest description of each pack (from listings and events).
    private var known: [String: AssetPack] = [:]
    /// The `Progress` of each pack being downloaded: the same object for every update of one
    /// download, so cancelling it cancels that download.
    private var progress: [String: Progress] = [:]
    /// Packs whose download this process saw begin and not end (to settle after a reconnect).
    private var underway: Set<String> = []
    /// Cancels a pack's download in basd (set by the connection).
    var cancel: @Sendable (String) -> Void = { _ in }

    /// Whether anything listens or waits (then a lost connection is made again).
    var hasInterest: Bool { lock.withLock { !listeners.isEmpty || !waiters.isEmpty } }

    // MARK: Listening

    /// A stream of updates (of `pack`, or of every pack), from now on. A per-pack stream finishes
    /// after `finished` or `failed`.
    func listen(pack: String?) -> AsyncStream<AssetPackManager.DownloadStatusUpdate> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: AssetPackManager.DownloadStatusUpdate.self, bufferingPolicy: .bufferingNewest(1024))
        let id = lock.withLock {
            nextID += 1
            listeners[nextID] = Listener(pack: pack, continuation: continuation)
            return nextID
        }
        continuation.onTermination = { [weak self] _ in
            self?.lock.withLock { _ = self?.listeners.removeValue(forKey: id) }
        }
        return stream
    }

    /// Registers a wait for `pack`'s next `finished` or `failed` before the request that may
    /// cause it is sent, so that no event is missed. Returns its id for ``stopWaiting(_:)``.
    func wait(for pack: String, resume: @escaping @Sendable (Outcome) -> Void) -> UInt64 {
        lock.withLock {
            nextID += 1
            waiters[nextID] = (pack, resume)
            return nextID
        }
    }

    /// Ends a wait that is no longer needed, resuming it with `outcome` if it was still waiting.
    func stopWaiting(_ id: UInt64, with outcome: Outcome) {
        let waiter = lock.withLock { waiters.removeValue(forKey: id) }
        waiter?.resume(outcome)
    }

    // MARK: What basd says

    /// A listing's packs: remembered to describe later updates.
    func remember(_ infos: [PackInfo]) {
        lock.withLock {
            for info in infos {
                if let pack = Self.assetPack(info) { known[info.assetPackID] = pack }
            }
        }
    }

    /// The pack as the manager presents it: the server's version if listed, else the local one.
    static func assetPack(_ info: PackInfo) -> AssetPack? {
        guard let version = info.serverVersion ?? info.localVersion else { return nil }
        return AssetPack(
            id: info.assetPackID, version: version,
            downloadSize: info.serverVersion != nil ? Int(info.downloadSize ?? 0) : 0,
            userInfo: info.userInfo.map { Data($0.utf8) },
            language: info.language.map(Locale.Language.init(identifier:)))
    }

    /// One event from basd.
    func received(_ event: PackEvent) {
        var deliveries: [(AsyncStream<AssetPackManager.DownloadStatusUpdate>.Continuation, Bool)] = []
        var resumes: [@Sendable (Outcome) -> Void] = []
        var update: AssetPackManager.DownloadStatusUpdate?
        var outcome: Outcome?
        lock.lock()
        let pack = describe(event)
        switch event.kind {
        case .began, .paused, .progress: underway.insert(event.assetPackID)
        case .finished, .failed: underway.remove(event.assetPackID)
        case .removed, .obsolete: break
        }
        switch event.kind {
        case .began:
            update = .began(pack)
        case .paused:
            update = .paused(pack)
        case .progress:
            let progress = progressLocked(of: event.assetPackID)
            if let total = event.bytesTotal { progress.totalUnitCount = total }
            if let present = event.bytesPresent { progress.completedUnitCount = present }
            update = .downloading(pack, progress)
        case .finished:
            if let done = progress.removeValue(forKey: event.assetPackID) {
                done.completedUnitCount = max(done.totalUnitCount, done.completedUnitCount)
            }
            update = .finished(pack)
            outcome = .finished
        case .failed(let failure):
            progress[event.assetPackID] = nil
            update = .failed(pack, Self.failure(pack: event.assetPackID, failure))
            outcome = .failed(failure)
        case .removed, .obsolete:
            break  // not download updates
        }
        if update != nil {
            let ends = outcome != nil
            for listener in listeners.values where listener.pack == nil || listener.pack == event.assetPackID {
                deliveries.append((listener.continuation, ends && listener.pack != nil))
            }
        }
        if outcome != nil {
            for (id, waiter) in waiters where waiter.pack == event.assetPackID {
                waiters[id] = nil
                resumes.append(waiter.resume)
            }
        }
        lock.unlock()
        if let update {
            for (continuation, finish) in deliveries {
                continuation.yield(update)
                if finish { continuation.finish() }
            }
        }
        if let outcome { for resume in resumes { resume(outcome) } }
    }

    /// A new connection's listing, after one was lost: a download seen under way that is no longer
    /// downloading ended while no connection was there to hear it (basd restarted, and finished or
    /// gave up on it): its `finished` or `failed` is posted now, so that no sequence waits forever.
    func settle(_ infos: [PackInfo]) {
        let ended: [PackEvent] = lock.withLock {
            infos.compactMap { info in
                guard underway.contains(info.assetPackID), !info.isDownloading
                else { return nil }
                let kind: PackEvent.Kind =
                    info.localVersion != nil && info.error == nil
                    ? .finished
                    : .failed(PackFailure(info.error ?? "basd stopped while downloading it", code: info.errorCode))
                return PackEvent(
                    kind, appIdentifier: info.appIdentifier, assetPackID: info.assetPackID,
                    version: info.localVersion ?? info.serverVersion)
            }
        }
        for event in ended { received(event) }
    }

    /// The connection to basd ended: waits end (to be asked again); listeners stay.
    func connectionLost() {
        let resumes = lock.withLock {
            defer { waiters = [:] }
            return waiters.values.map(\.resume)
        }
        for resume in resumes { resume(.connectionLost) }
    }

    /// The error a failed download reports: `BAManagedErrorDomain`, code 2
    /// (`localAvailabilityFailure`), with basd's reason.
    ///
    /// basd's error code (`docs/protocol.md`, "Errors": a refused manifest or index, a parked
    /// job), when the failure has one, is the underlying error's code in the domain
    /// ``basdErrorDomain``, so that an app can tell them apart without reading the message.
    static func failure(pack: String, _ failure: PackFailure) -> any Error {
        if failure.isCancellation { return CancellationError() }
        let message = failure.message
        let code = failure.code
        var userInfo: [String: Any] = [
            NSLocalizedDescriptionKey: "asset pack \(pack) could not be made local: \(message)",
            BAAssetPackIdentifierErrorKey: pack,
        ]
        if let code {
            userInfo[NSUnderlyingErrorKey] = NSError(
                domain: basdErrorDomain, code: code, userInfo: [NSLocalizedDescriptionKey: message])
        }
        return NSError(
            domain: BAManagedErrorDomain, code: BAManagedErrorCode.localAvailabilityFailure.rawValue, userInfo: userInfo
        )
    }

    /// The domain of basd's own error codes (`docs/protocol.md`, "Errors") under a pack failure.
    static let basdErrorDomain = "org.swift-background-assets.basd"

    /// The pack an event is about (under the lock).
    private func describe(_ event: PackEvent) -> AssetPack {
        let earlier = known[event.assetPackID]
        let pack = AssetPack(
            id: event.assetPackID, version: event.version ?? earlier?.version ?? 0,
            downloadSize: event.downloadSize.map { Int($0) } ?? earlier?.downloadSize ?? 0,
            userInfo: event.userInfo.map { Data($0.utf8) } ?? earlier?.userInfo)
        if event.downloadSize != nil { known[event.assetPackID] = pack }
        return pack
    }

    /// The download's `Progress` (under the lock), made on its first update; cancelling it
    /// cancels the download.
    private func progressLocked(of pack: String) -> Progress {
        if let existing = progress[pack] { return existing }
        let made = Progress(totalUnitCount: -1)
        made.isCancellable = true
        let cancel = self.cancel
        made.cancellationHandler = { cancel(pack) }
        progress[pack] = made
        return made
    }
}
