import BACore
import BADaemonProtocol
import BAHashing
import BAPacks
import BAStore
import Foundation

/// One pack version being installed or updated: its ``PackJobMachine`` (the rules, without I/O)
/// and what carries its actions out (``PackService``'s `run(_:_:)`): the index fetched and
/// checked, a plan from the local version, the staging folder prepared (or resumed), what the
/// local version has taken, the rest fetched through the engine a window at a time, verified, and
/// switched.
///
/// Its fields are the executor's; the staging folder is touched only on ``queue``, one step at
/// a time. Progress survives a restart as what is verified in the staging folder, not as rows.
final class PackJob: @unchecked Sendable {
    let key: PackService.Key
    let app: StoredApp
    let entry: PackService.Entry
    /// An install waits for it; it goes ahead of background work.
    var essential: Bool
    /// The local version is the same one, damaged: assemble it again beside it.
    let repair: Bool
    let queue: DispatchQueue
    /// Closed when the job stops: no switch to its version after that (``PackSwitchGate``).
    let gate = PackSwitchGate()
    var machine: PackJobMachine
    /// The engine's fetch id of each unit in flight, by unit key.
    var fetchIDs: [String: String] = [:]
    /// Its server gives no answer: it was told `paused` (`server`), and is told `began` when it answers.
    var waitingForServer = false
    /// It waits for consent to fetch on a metered network (``PackConsent``), and whether its
    /// followers were told `paused` for it (they are told `began` when it ends).
    var consentPaused = false
    var consentPauseSent = false
    /// The staging folder (see ``StagingBox``).
    var staging: StagingBox?

    /// The job's staging: on ``queue`` to prepare and finish it, and under ``lock`` on the
    /// engine thread while units are in flight (their ``PackUnitSink``s write what lands).
    final class StagingBox: @unchecked Sendable {
        let staging: PackStaging
        let lock = NSLock()
        /// The job stopped (``close()``): a sink still in flight writes nothing more.
        private var closed = false
        init(_ staging: PackStaging) { self.staging = staging }

        /// From now on ``whileOpen(_:)`` runs nothing: the fetches of a stopped job (removed,
        /// replaced, failed) write no more frames into its staging, which the next attempt
        /// prepares again, even before the engine has handled their cancellation.
        func close() { lock.withLock { closed = true } }

        /// `body` with the staging, under the lock, unless the job stopped (nil then).
        func whileOpen<T>(_ body: (PackStaging) -> T) -> T? {
            lock.withLock { closed ? nil : body(staging) }
        }
    }

    /// `queue` is the pack's own (``PackService/packQueue(_:)``), shared with its removal.
    init(
        key: PackService.Key, app: StoredApp, entry: PackService.Entry, essential: Bool, repair: Bool,
        queue: DispatchQueue, chunkWindow: Int, bundleWindow: Int
    ) {
        self.key = key
        self.app = app
        self.entry = entry
        self.essential = essential
        self.repair = repair
        self.queue = queue
        self.machine = PackJobMachine(
            key: key, version: entry.version, downloadSize: entry.downloadSize, chunkWindow: chunkWindow,
            bundleWindow: bundleWindow)
    }

    /// No switch to its version from now on (it stopped: removed, replaced, failed).
    func cancel() {
        gate.close()
        staging?.close()
    }

    var index: PackIndex? { machine.index }
    var bytesTotal: Int64? { machine.bytesTotal }
    /// What staging holds and what the fetches in flight brought so far (``PackJobMachine/bytesShown``).
    var bytesPresent: Int64? { machine.bytesShown }
    var bytesToFetch: Int64? { machine.bytesToFetch }
    var bytesFetched: Int64 { machine.bytesFetchedShown }
    var bytesReused: Int64? { machine.bytesReused }
    var waitingFor: WaitingReason? { machine.waitingFor }
    /// The engine's ids of its fetches in flight.
    var fetchesInFlight: Dictionary<String, String>.Values { fetchIDs.values }

    /// One fetch: a chunk file, or a bundle whose chunks are mostly needed.
    struct Unit: Sendable, Hashable {
        /// Relative to the publish folder.
        var path: String
        /// Its size (the bundle's, or the chunk's stored length).
        var size: Int64
        /// The needed chunks in it, at their offsets.
        var chunks: [(PackIndex.Chunk, Int64)]
        var isBundle: Bool
        /// Unique in the job: the chunk's SHA-256 or `bundle-K`.
        var key: String
        /// Where its first needed frame starts: a bundle whose first frames are in staging already
        /// (a resume after `kill -9`) is fetched from there (`Range`), not whole. 0 for a chunk file.
        var start: Int64 = 0

        /// The bytes its fetch brings: from ``start`` to the end.
        var bytesToFetch: Int64 { size - start }

        /// How `chunks` (the needed ones, in index order) are fetched: a bundle from its first
        /// needed frame to its end when at least 90 % of those bytes are needed (a first install:
        /// a few large requests; a resume: the rest of each bundle it had begun), else its needed
        /// chunks one by one (a delta: only what changed, never 10 % more).
        static func plan(_ chunks: [PackIndex.Chunk], index: PackIndex) -> [Unit] {
            guard let layout = index.bundleLayout, let bundles = index.bundles else {
                return chunks.map(single)
            }
            var needed: [Int: [(PackIndex.Chunk, Int64)]] = [:]
            for chunk in chunks {
                if let place = layout[chunk.sha256] { needed[place.bundle, default: []].append((chunk, place.offset)) }
            }
            var units: [Unit] = []
            var taken: Set<Int> = []
            for chunk in chunks {
                guard let place = layout[chunk.sha256] else {
                    units.append(single(chunk))
                    continue
                }
                let bundle = bundles[place.bundle]
                let wanted = needed[place.bundle] ?? []
                let bytes = wanted.reduce(Int64(0)) { $0 + Int64($1.0.storedLength) }
                let start = wanted.map(\.1).min() ?? 0
                if bytes * 10 >= (bundle.size - start) * 9 {
                    if taken.insert(place.bundle).inserted {
                        units.append(
                            Unit(
                                path: bundle.path, size: bundle.size, chunks: wanted, isBundle: true,
                                key: "bundle-\(place.bundle)", start: start))
                    }
                } else {
                    units.append(single(chunk))
                }
            }
            return units
        }

        /// Units are the same when they fetch the same file the same way (their chunks follow).
        static func == (lhs: Unit, rhs: Unit) -> Bool {
            lhs.key == rhs.key && lhs.path == rhs.path && lhs.size == rhs.size && lhs.isBundle == rhs.isBundle
                && lhs.start == rhs.start
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(key)
            hasher.combine(path)
        }

        static func single(_ chunk: PackIndex.Chunk) -> Unit {
            Unit(
                path: PackIndex.chunkPath(chunk.sha256), size: Int64(chunk.storedLength), chunks: [(chunk, 0)],
                isBundle: false, key: chunk.sha256)
        }
    }
}

extension PackService {
    /// A pack's policy as the log names it, and whether it is fetched at once for someone
    /// waiting (`urgent`): "essential", "on demand, requested", "prefetch".
    static func describe(_ policy: PackManifest.DownloadPolicy, urgent: Bool) -> String {
        switch Self.policy(policy) {
        case .essential: "essential"
        case .prefetch: urgent ? "prefetch, requested" : "prefetch"
        case .onDemand: urgent ? "on demand, requested" : "on demand"
        }
    }

    /// Starts (or resumes) installing `entry` for `key`.
    func startJob(_ key: Key, app: StoredApp, entry: Entry, essential: Bool, repair: Bool = false) {
        let job = PackJob(
            key: key, app: app, entry: entry, essential: essential, repair: repair, queue: packQueue(key),
            chunkWindow: fetchWindow, bundleWindow: bundleWindow)
        jobs[key] = job
        send(PackEvent(.began, appIdentifier: key.app, assetPackID: key.pack, version: entry.version))
        if !essential, let hold = transfers.backgroundHold {
            // Held (Low Power Mode, a metered network) from the start: paused at once (`began`
            // again when it ends).
            send(
                PackEvent(
                    .paused(WaitingReason(hold)), appIdentifier: key.app, assetPackID: key.pack,
                    version: entry.version))
        }
        log(
            "asset pack \(key): installing version \(entry.version) (\(Self.describe(entry.downloadPolicy, urgent: essential)))"
        )
        waitsForServerAtStart(job)
        run(job, .start)
    }

    /// Stops a job (replaced, removed, uninstalled): its fetches end; staging stays for later.
    func stopJob(_ key: Key) {
        guard let job = jobs.removeValue(forKey: key) else { return }
        job.cancel()
        apply(job.machine.handle(.stop), to: job)
        sweepFetchIfIdle(app: key.app)
    }

    /// Whether `job` is the pack's current job and not over: a late answer to one that is not is dropped.
    func live(_ job: PackJob) -> Bool { jobs[job.key] === job && !job.machine.phase.isOver }

    /// Feeds `input` to the job's machine and carries out what it says (on the executor).
    func run(_ job: PackJob, _ input: PackJobMachine.Input) {
        guard jobs[job.key] === job else { return }
        apply(job.machine.handle(input), to: job)
    }

    private func apply(_ actions: [PackJobMachine.Action], to job: PackJob) {
        for action in actions {
            switch action {
            case .loadIndex: loadIndex(job)
            case .prepare(let index): prepare(job, index: index)
            case .measureSpace(let later):
                let root = containers.packRoot(app: job.key.app)
                let measure: @Sendable () -> Void = { [self] in
                    // Unknown (statfs failed, logged): taken as enough; a full disk is still caught
                    // on write, and then waits for space.
                    run(
                        job,
                        .space(free: logged("asset pack \(job.key): cannot measure free space") { try freeSpace(root) })
                    )
                }
                if later { executor.after(retryInterval, measure) } else { measure() }
            case .fetch(let unit): fetch(unit, for: job)
            case .cancelFetches(let keys):
                for key in keys {
                    if let id = job.fetchIDs.removeValue(forKey: key) { transfers.cancelPackFetch(id) }
                }
            case .finish: finish(job)
            case .send(let kind): send(kind, of: job)
            case .log(let message): log("asset pack \(job.key): \(message)")
            case .recordLocal: recordLocal(job)
            case .recordFailure(let failure): recordFailure(job, failure)
            }
        }
        // A localized pack in place (or failed): the app's other languages may go now.
        if job.machine.phase.isOver, job.entry.language != nil || languageWaits[job.key.app] != nil {
            settleLanguages(app: job.key.app)
        }
    }

    /// Sends the job's event `kind`, with its bytes for `progress` and `finished`.
    private func send(_ kind: PackEvent.Kind, of job: PackJob) {
        var event = PackEvent(kind, appIdentifier: job.key.app, assetPackID: job.key.pack, version: job.entry.version)
        switch kind {
        case .progress:
            event.bytesPresent = job.bytesPresent
            event.bytesTotal = job.bytesTotal
            event.bytesFetched = job.bytesFetched
            event.bytesReused = job.bytesReused
        case .finished:
            event.bytesPresent = job.bytesTotal
            event.bytesTotal = job.bytesTotal
            event.bytesFetched = job.bytesFetched
            event.bytesReused = job.bytesReused
        default: break
        }
        send(event)
    }
}
