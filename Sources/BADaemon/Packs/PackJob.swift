import BACore
import BADaemonProtocol
import BADownloadEngine
import BAHashing
import BAPacks
import BAStore
import Foundation

/// One pack version being installed or updated: fetch and check its index, plan from the local
/// version, prepare (or resume) the staging folder, take what the local version has, fetch the
/// rest through the engine a window at a time, verify, and switch (``PackService``).
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

    var cancelled = false
    /// Closed when the job stops: no switch to its version after that (``PackSwitchGate``).
    let gate = PackSwitchGate()
    var index: PackIndex?
    /// What is still to fetch, in index order, and the next one to start.
    var units: [Unit] = []
    var next = 0
    /// Units in flight: their key to the fetch id.
    var inFlight: [String: String] = [:]
    var bytesTotal: Int64?
    var bytesPresent: Int64?
    var bytesToFetch: Int64?
    var bytesFetched: Int64 = 0
    var bytesReused: Int64?
    var waitingFor: String?
    var lastProgressEvent: ContinuousClock.Instant?
    /// The staging folder (on ``queue`` only).
    var staging: StagingBox?

    final class StagingBox: @unchecked Sendable {
        let staging: PackStaging
        init(_ staging: PackStaging) { self.staging = staging }
    }

    /// `queue` is the pack's own (``PackService/packQueue(_:)``), shared with its removal.
    init(
        key: PackService.Key, app: StoredApp, entry: PackService.Entry, essential: Bool, repair: Bool,
        queue: DispatchQueue
    ) {
        self.key = key
        self.app = app
        self.entry = entry
        self.essential = essential
        self.repair = repair
        self.queue = queue
    }

    func cancel() {
        cancelled = true
        gate.close()
    }

    /// One fetch: a chunk file, or a bundle whose chunks are mostly needed.
    struct Unit: Sendable {
        /// Relative to the publish folder.
        var path: String
        /// Its size (the bundle's, or the chunk's stored length).
        var size: Int64
        /// The needed chunks in it, at their offsets.
        var chunks: [(PackIndex.Chunk, Int64)]
        var isBundle: Bool
        /// Unique in the job: the chunk's SHA-256 or `bundle-K`.
        var key: String

        /// How `chunks` (the needed ones, in index order) are fetched: a bundle whole when at
        /// least 90 % of its bytes are needed (a first install: a few large requests), else its
        /// needed chunks one by one (a delta: only what changed, never 10 % more).
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
                if bytes * 10 >= bundle.size * 9 {
                    if taken.insert(place.bundle).inserted {
                        units.append(
                            Unit(
                                path: bundle.path, size: bundle.size, chunks: wanted, isBundle: true,
                                key: "bundle-\(place.bundle)"))
                    }
                } else {
                    units.append(single(chunk))
                }
            }
            return units
        }

        static func single(_ chunk: PackIndex.Chunk) -> Unit {
            Unit(
                path: PackIndex.chunkPath(chunk.sha256), size: Int64(chunk.storedLength), chunks: [(chunk, 0)],
                isBundle: false, key: chunk.sha256)
        }
    }
}

extension PackService {
    /// Starts (or resumes) installing `entry` for `key`.
    func startJob(_ key: Key, app: StoredApp, entry: Entry, essential: Bool, repair: Bool = false) {
        let job = PackJob(
            key: key, app: app, entry: entry, essential: essential, repair: repair, queue: packQueue(key))
        jobs[key] = job
        send(PackEvent(kind: "began", appIdentifier: key.app, assetPackID: key.pack, version: entry.version))
        if !essential, let hold = transfers.backgroundHold {
            // Held (Low Power Mode, a metered network) from the start: paused at once (`began`
            // again when it ends).
            var paused = PackEvent(
                kind: "paused", appIdentifier: key.app, assetPackID: key.pack, version: entry.version)
            paused.waitingFor = hold.rawValue
            send(paused)
        }
        log("asset pack \(key): installing version \(entry.version)\(essential ? " (essential)" : "")")
        fetchIndex(job)
    }

    /// Stops a job (replaced, removed, uninstalled): its fetches end; staging stays for later.
    func stopJob(_ key: Key) {
        guard let job = jobs.removeValue(forKey: key) else { return }
        job.cancel()
        stopFetches(job)
        sweepFetchIfIdle(app: key.app)
    }

    private func stopFetches(_ job: PackJob) {
        for id in job.inFlight.values { transfers.cancelPackFetch(id) }
        job.inFlight = [:]
    }

    private func live(_ job: PackJob) -> Bool { !job.cancelled && jobs[job.key] === job }

    /// The index: kept from an earlier attempt if its SHA-256 is right, else fetched and checked.
    private func fetchIndex(_ job: PackJob) {
        let path = indexPath(app: job.key.app, pack: job.key.pack, version: job.entry.version)
        // A copy kept from an earlier attempt, if its SHA-256 is right (anything else: fetched again).
        if let bytes = try? RegularFile.read(path, limit: PackLimits.maximumIndexBytes),
            bytes.withUnsafeBytes({ SHA256Hasher.hex(of: $0) }) == job.entry.indexSHA256
        {
            readIndex(job, bytes: bytes)
            return
        }
        let directory = fetchDirectory(app: job.key.app)
        do { try Self.makeDirectories(directory) } catch {
            fail(job, "cannot create \(directory): \(error)")
            return
        }
        fetchSequence += 1
        let destination = directory + "/index-\(job.key.pack)-\(job.entry.version)-\(fetchSequence).json"
        transfers.fetchPackFile(
            .init(
                id: "\(job.key.app)/index/\(fetchSequence)", url: job.entry.indexURL, destination: destination,
                byteLimit: Int64(PackLimits.maximumIndexBytes), essential: true), for: job.app
        ) { [self] result in
            guard live(job) else {
                unlink(destination)
                return
            }
            switch result {
            case .failure(let failure):
                fail(job, "cannot fetch the pack's index \(job.entry.indexURL): \(failure.message)")
            case .success(let fetched):
                defer { unlink(fetched) }
                let bytes: [UInt8]
                do { bytes = try RegularFile.read(fetched, limit: PackLimits.maximumIndexBytes) } catch {
                    fail(job, "cannot read the fetched index: \(error)")
                    return
                }
                let actual = bytes.withUnsafeBytes { SHA256Hasher.hex(of: $0) }
                guard actual == job.entry.indexSHA256 else {
                    fail(
                        job,
                        "the index at \(job.entry.indexURL) has SHA-256 \(actual), not the \(job.entry.indexSHA256) the manifest gives: the CDN serves another file; publish again"
                    )
                    return
                }
                do {
                    try Self.makeDirectories((path as NSString).deletingLastPathComponent)
                    try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
                } catch {
                    fail(job, "cannot keep the index at \(path): \(error)")
                    return
                }
                readIndex(job, bytes: bytes)
            }
        }
    }

    /// Believes the index only once it passed every bound (``PackIndex/decode(_:)``), names this
    /// pack and version, and needs no more than the manifest's download size: a refused index
    /// fails this pack (code 1102) and nothing else.
    private func readIndex(_ job: PackJob, bytes: [UInt8]) {
        let index: PackIndex
        do {
            index = try PackIndex.decode(bytes)
        } catch {
            fail(job, "the index at \(job.entry.indexURL) is refused: \(error)", code: Self.invalidMetadataCode)
            return
        }
        guard index.id == job.key.pack, index.version == job.entry.version else {
            fail(
                job,
                "the index at \(job.entry.indexURL) describes \(index.id) version \(index.version), not \(job.key.pack) version \(job.entry.version)",
                code: Self.invalidMetadataCode)
            return
        }
        guard index.downloadSize <= job.entry.downloadSize else {
            fail(
                job,
                "the index at \(job.entry.indexURL) needs \(index.downloadSize) bytes, more than the \(job.entry.downloadSize) the signed manifest gives: refused",
                code: Self.invalidMetadataCode)
            return
        }
        job.index = index
        prepare(job, index: index)
    }

    /// Plans from the local version, prepares or resumes staging and takes the local chunks (on
    /// the job's queue), then checks the space the rest needs.
    private func prepare(_ job: PackJob, index: PackIndex) {
        let root = containers.packRoot(app: job.key.app)
        let rows = (try? store.packs(app: job.key.app)) ?? []
        let local = rows.first { $0.packID == job.key.pack }?.localVersion
        let installedIndexPath = local.map { indexPath(app: job.key.app, pack: job.key.pack, version: $0) }
        // The app's other local packs: a chunk they share with this one is copied, not fetched.
        let otherIndexPaths = rows.compactMap { row in
            row.packID == job.key.pack
                ? nil : row.localVersion.map { indexPath(app: job.key.app, pack: row.packID, version: $0) }
        }
        job.queue.async { [self] in
            let installed: PackIndex? = installedIndexPath.flatMap { path in try? PackIndex.read(path) }
            let result: Result<(PackJob.StagingBox, Set<String>, PackPlan), PackError>
            do throws(PackError) {
                let others: [PackIndex] = otherIndexPaths.compactMap { path in try? PackIndex.read(path) }
                let plan = PackPlan(target: index, installed: installed, others: others)
                let staging = try PackStaging(root: root, plan: plan)
                staging.repair = job.repair
                var needed = try staging.prepare()
                needed = try staging.copyFromInstalled(needed)
                result = .success((PackJob.StagingBox(staging), needed, plan))
            } catch {
                result = .failure(error)
            }
            executor.async { [self] in
                guard live(job) else { return }
                switch result {
                case .failure(let error):
                    fail(job, "cannot prepare version \(index.version): \(error)")
                case .success(let (box, needed, plan)):
                    job.staging = box
                    let chunks = plan.items.map(\.chunk).filter { needed.contains($0.sha256) }
                    job.units = PackJob.Unit.plan(chunks, index: index)
                    job.bytesTotal = plan.totalBytes
                    job.bytesPresent = box.staging.bytesPresent
                    job.bytesToFetch = job.units.reduce(0) { $0 + $1.size }
                    job.bytesReused = plan.totalBytes - chunks.reduce(0) { $0 + Int64($1.length) }
                    let bundles = job.units.filter(\.isBundle).count
                    log(
                        "asset pack \(job.key): version \(index.version) needs \(chunks.count) chunk(s) in \(bundles) bundle(s) and \(job.units.count - bundles) single fetch(es), \(job.bytesToFetch ?? 0) bytes; \(job.bytesReused ?? 0) of \(plan.totalBytes) bytes are here already"
                    )
                    checkSpaceThenFetch(job)
                }
            }
        }
    }

    /// Free space needed before the first byte is fetched: what the staging files still lack
    /// (the version's bytes less what is verified there) and the compressed units still to fetch,
    /// which sit in `.fetch` while they are checked.
    private func checkSpaceThenFetch(_ job: PackJob) {
        guard live(job) else { return }
        let unwritten = max(0, (job.bytesTotal ?? 0) - (job.bytesPresent ?? 0))
        let fetching = job.units[job.next...].reduce(Int64(0)) { $0 + $1.size }
        let missing = job.units.count > job.next ? unwritten + fetching : 0
        let root = containers.packRoot(app: job.key.app)
        if missing > 0, let free = try? freeSpace(root), free < missing {
            if job.waitingFor != "space" {
                log("asset pack \(job.key): waiting for \(missing - free) more bytes of free space in \(root)")
                paused(job, waitingFor: "space")
            }
            executor.after(retryInterval) { [self] in checkSpaceThenFetch(job) }
            return
        }
        if job.waitingFor != nil {
            job.waitingFor = nil
            // Going on after a pause is `began` again (Apple's DownloadStatusUpdate).
            send(
                PackEvent(
                    kind: "began", appIdentifier: job.key.app, assetPackID: job.key.pack, version: job.entry.version))
        }
        fillWindow(job)
    }

    /// Waits for space, then fetches `unit` again (the disk filled up while it was in flight).
    private func waitForSpace(_ job: PackJob, refetch unit: PackJob.Unit) {
        job.units.append(unit)
        if job.waitingFor != "space" {
            log("asset pack \(job.key): the disk is full; waiting for space")
            paused(job, waitingFor: "space")
        }
        executor.after(retryInterval) { [self] in checkSpaceThenFetch(job) }
    }

    /// The job waits (for `reason`): a `paused` event says so, once.
    private func paused(_ job: PackJob, waitingFor reason: String) {
        job.waitingFor = reason
        var event = PackEvent(
            kind: "paused", appIdentifier: job.key.app, assetPackID: job.key.pack, version: job.entry.version)
        event.waitingFor = reason
        send(event)
    }

    /// The publish folder's URL (the index's, less `packs/ID/N.json`), ending in `/`.
    private func baseURL(_ job: PackJob) -> String? {
        let suffix = PackIndex.indexPath(id: job.key.pack, version: job.entry.version)
        guard job.entry.indexURL.hasSuffix(suffix) else { return nil }
        return String(job.entry.indexURL.dropLast(suffix.count))
    }

    /// Starts fetches until the windows are full (``fetchWindow`` chunks, ``bundleWindow``
    /// bundles); once nothing is left, finishes.
    private func fillWindow(_ job: PackJob) {
        guard live(job), job.waitingFor == nil else { return }
        guard job.next < job.units.count || !job.inFlight.isEmpty else {
            finish(job)
            return
        }
        let directory = fetchDirectory(app: job.key.app) + "/\(job.key.pack)-\(job.entry.version)"
        if job.next < job.units.count {
            do { try Self.makeDirectories(directory) } catch {
                fail(job, "cannot create \(directory): \(error)")
                return
            }
        }
        guard let base = baseURL(job) else {
            fail(
                job,
                "the index URL \(job.entry.indexURL) does not end in \(PackIndex.indexPath(id: job.key.pack, version: job.entry.version)): chunks cannot be found beside it"
            )
            return
        }
        while job.next < job.units.count {
            let unit = job.units[job.next]
            let bundles = job.inFlight.keys.filter { $0.hasPrefix("bundle-") }.count
            if unit.isBundle ? bundles >= bundleWindow : job.inFlight.count - bundles >= fetchWindow { break }
            job.next += 1
            fetchSequence += 1
            let id = "\(job.key.app)/\(job.key.pack)/\(job.entry.version)/\(unit.key)"
            job.inFlight[unit.key] = id
            transfers.fetchPackFile(
                .init(
                    id: id, url: base + unit.path, destination: directory + "/" + unit.key,
                    expectedSize: unit.size, essential: job.essential), for: job.app
            ) { [self] result in
                guard live(job) else {
                    if case .success(let path) = result { unlink(path) }
                    return
                }
                switch result {
                case .failure(let failure) where failure.noSpace:
                    job.inFlight[unit.key] = nil
                    waitForSpace(job, refetch: unit)
                case .failure(let failure):
                    let missing =
                        failure.httpStatus == 404
                        ? " (the CDN does not have it: is the publish folder complete? `ba pack verify` it)" : ""
                    fail(job, "\(unit.path) of version \(job.entry.version): \(failure.message)\(missing)")
                case .success(let path):
                    accept(job, unit: unit, path: path)
                }
            }
        }
    }

    /// Checks each chunk of a fetched unit and writes it where the index places it (on the
    /// job's queue): a chunk file whole, a bundle chunk by chunk at its offsets.
    private func accept(_ job: PackJob, unit: PackJob.Unit, path: String) {
        guard let box = job.staging else { return }
        job.queue.async { [self] in
            let result: Result<Int64, PackError>
            do throws(PackError) {
                let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
                guard fd >= 0 else {
                    throw PackError.system("cannot open the fetched \(path)", call: "open")
                }
                defer { close(fd) }
                for (chunk, offset) in unit.chunks {
                    var frame = [UInt8](repeating: 0, count: chunk.storedLength)
                    let count = frame.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
                    guard count == chunk.storedLength else {
                        throw PackError("\(unit.path) is shorter than its index says (at \(offset))", code: .badContent)
                    }
                    let accepted: Result<Void, PackError> = frame.withUnsafeBytes { buffer in
                        Result { () throws(PackError) in try box.staging.accept(sha256: chunk.sha256, frame: buffer) }
                    }
                    try accepted.get()
                }
                result = .success(box.staging.bytesPresent)
            } catch {
                result = .failure(error)
            }
            unlink(path)
            executor.async { [self] in
                guard live(job) else { return }
                job.inFlight[unit.key] = nil
                switch result {
                case .failure(let error) where error.isNoSpace:
                    // The disk filled up under the staging folder: wait for space, then fetch it again.
                    waitForSpace(job, refetch: unit)
                case .failure(let error) where error.code == .badContent:
                    fail(
                        job,
                        "the CDN served a bad chunk in \(unit.path) for version \(job.entry.version): \(error); version \(job.entry.version) is not installed, the local one stays"
                    )
                case .failure(let error):
                    fail(
                        job,
                        "version \(job.entry.version) could not be assembled from \(unit.path): \(error); the local one stays"
                    )
                case .success(let present):
                    job.bytesPresent = present
                    job.bytesFetched += unit.size
                    progress(job)
                    fillWindow(job)
                }
            }
        }
    }

    private func progress(_ job: PackJob) {
        let now = clock.instant
        if let last = job.lastProgressEvent, now - last < .milliseconds(250) { return }
        job.lastProgressEvent = now
        var event = PackEvent(
            kind: "progress", appIdentifier: job.key.app, assetPackID: job.key.pack, version: job.entry.version)
        event.bytesPresent = job.bytesPresent
        event.bytesTotal = job.bytesTotal
        event.bytesFetched = job.bytesFetched
        event.bytesReused = job.bytesReused
        send(event)
    }

    /// Verifies every file, makes the version read-only and durable, and switches the link (on
    /// the job's queue); then records the version as local and removes the old one when free.
    private func finish(_ job: PackJob) {
        guard let box = job.staging else { return }
        let root = containers.packRoot(app: job.key.app)
        let version = job.entry.version
        job.queue.async { [self] in
            let result: Result<Void, PackError>
            do throws(PackError) {
                try box.staging.finish()
                Self.pauseBeforeSwitchForTests(job.key, version: version)
                // Not after a removal (or anything that stopped the job): it would bring the pack back.
                try job.gate.pass { () throws(PackError) in
                    try PackInstallation.switchCurrent(root: root, id: job.key.pack, version: version)
                }
                Self.removeOtherStaging(root: root, id: job.key.pack, keeping: version, log: log)
                result = .success(())
            } catch {
                result = .failure(error)
            }
            try? FileManager.default.removeItem(
                atPath: fetchDirectory(app: job.key.app) + "/\(job.key.pack)-\(version)")
            executor.async { [self] in
                guard jobs[job.key] === job else { return }
                switch result {
                case .failure(let error):
                    fail(job, "version \(version) could not be completed: \(error)")
                case .success:
                    jobs[job.key] = nil
                    let rows = (try? store.packs(app: job.key.app)) ?? []
                    var row =
                        rows.first { $0.packID == job.key.pack }
                        ?? StoredPack(appIdentifier: job.key.app, packID: job.key.pack)
                    let previous = row.localVersion
                    row.localVersion = version
                    row.target = nil
                    row.failure = nil
                    row.failureCode = nil
                    row.interruptedStarts = 0
                    save(row)
                    if job.repair { removeWhenFree(job.key, version: version, replaced: true) }
                    if let previous, previous != version {
                        removeWhenFree(job.key, version: previous)
                        try? FileManager.default.removeItem(
                            atPath: indexPath(app: job.key.app, pack: job.key.pack, version: previous))
                    }
                    sweepFetchIfIdle(app: job.key.app)
                    log(
                        "asset pack \(job.key): version \(version) is local (fetched \(job.bytesFetched) bytes, reused \(job.bytesReused ?? 0) of \(job.bytesTotal ?? 0))"
                    )
                    var event = PackEvent(
                        kind: "finished", appIdentifier: job.key.app, assetPackID: job.key.pack, version: version)
                    event.bytesPresent = job.bytesTotal
                    event.bytesTotal = job.bytesTotal
                    event.bytesFetched = job.bytesFetched
                    event.bytesReused = job.bytesReused
                    send(event)
                }
            }
        }
    }

    /// Ends a job that cannot go on: its fetches stop, the staging folder stays (what is verified
    /// in it is kept for the next attempt), the local version stays, and the row says why.
    func fail(_ job: PackJob, _ message: String, code: Int? = nil) {
        guard jobs[job.key] === job else { return }
        jobs[job.key] = nil
        job.cancel()
        stopFetches(job)
        log("asset pack \(job.key): \(message)")
        if var row = (try? store.packs(app: job.key.app))?.first(where: { $0.packID == job.key.pack }) {
            row.target = nil
            row.failure = message
            row.failureCode = code
            row.interruptedStarts = 0
            save(row)
        }
        var event = PackEvent(
            kind: "failed", appIdentifier: job.key.app, assetPackID: job.key.pack, version: job.entry.version)
        event.message = message
        event.errorCode = code
        send(event)
    }

    /// The protocol's code for refused pack metadata (an index or manifest: `docs/protocol.md`).
    static let invalidMetadataCode = 1102
}
