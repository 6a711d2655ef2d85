import BACore
import BADaemonProtocol
import BAHashing
import BAPacks
import BAStore
import Foundation

/// The I/O of a ``PackJob``'s steps: each carries out one ``PackJobMachine/Action`` and answers
/// the machine with what came of it (through `run(_:_:)`, on the executor).
extension PackService {
    /// The index: kept from an earlier attempt if its SHA-256 is right, else fetched; its SHA-256
    /// must be the manifest's, and it is decoded within bounds (``resolveIndex(_:of:)``) before
    /// anything believes it.
    func loadIndex(_ job: PackJob) {
        let path = indexPath(app: job.key.app, pack: job.key.pack, version: job.entry.version)
        // A copy kept from an earlier attempt, if its SHA-256 is right (anything else: fetched again).
        if let bytes = try? RegularFile.read(path, limit: PackLimits.maximumIndexBytes),
            bytes.withUnsafeBytes({ SHA256Hasher.hex(of: $0) }) == job.entry.indexSHA256
        {
            resolveIndex(bytes, of: job)
            return
        }
        let directory = fetchDirectory(app: job.key.app)
        do { try Self.makeDirectories(directory) } catch {
            run(job, .indexLoaded(.failure(PackFailure("cannot create \(directory): \(error)"))))
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
                if case .success(let fetched) = result { unlink(fetched) }
                unlink(destination)
                return
            }
            switch result {
            case .failure(let failure):
                run(
                    job,
                    .indexLoaded(
                        .failure(
                            PackFailure("cannot fetch the pack's index \(job.entry.indexURL): \(failure.message)"))))
            case .success(let fetched):
                defer { unlink(fetched) }
                switch keep(fetched, as: path, of: job) {
                case .failure(let failure): run(job, .indexLoaded(.failure(failure)))
                case .success(let bytes): resolveIndex(bytes, of: job)
                }
            }
        }
    }

    /// The fetched index at `fetched`, checked against the manifest's SHA-256, kept at `path`
    /// for a later attempt.
    private func keep(_ fetched: String, as path: String, of job: PackJob) -> Result<[UInt8], PackFailure> {
        let bytes: [UInt8]
        do { bytes = try RegularFile.read(fetched, limit: PackLimits.maximumIndexBytes) } catch {
            return .failure(PackFailure("cannot read the fetched index: \(error)"))
        }
        let actual = bytes.withUnsafeBytes { SHA256Hasher.hex(of: $0) }
        guard actual == job.entry.indexSHA256 else {
            return .failure(
                PackFailure(
                    "the index at \(job.entry.indexURL) has SHA-256 \(actual), not the \(job.entry.indexSHA256) the manifest gives: the CDN serves another file; publish again"
                ))
        }
        do {
            try Self.makeDirectories((path as NSString).deletingLastPathComponent)
            try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            return .failure(PackFailure("cannot keep the index at \(path): \(error)"))
        }
        return .success(bytes)
    }

    /// Plans from the local version, prepares or resumes staging and takes the local chunks (on
    /// the job's queue).
    func prepare(_ job: PackJob, index: PackIndex) {
        let root = containers.packRoot(app: job.key.app)
        let rows: [StoredPack]
        do { rows = try store.packs(app: job.key.app) } catch {
            run(job, .prepared(.failure(PackFailure("basd could not read its asset packs: \(error)"))))
            return
        }
        let local = rows.first { $0.packID == job.key.pack }?.localVersion
        let installedIndexPath = local.map { indexPath(app: job.key.app, pack: job.key.pack, version: $0) }
        // The app's other local packs: a chunk they share with this one is copied, not fetched.
        let otherIndexPaths = rows.compactMap { row in
            row.packID == job.key.pack
                ? nil : row.localVersion.map { indexPath(app: job.key.app, pack: row.packID, version: $0) }
        }
        job.queue.async { [self] in
            // A local index that cannot be read only means less to reuse: those chunks are fetched.
            let installed: PackIndex? = installedIndexPath.flatMap { path in
                logged("asset pack \(job.key): the local version's index is not reused") { try PackIndex.read(path) }
            }
            let result: Result<(PackJob.StagingBox, PackJobMachine.Prepared), PackFailure>
            do throws(PackError) {
                let others: [PackIndex] = otherIndexPaths.compactMap { path in
                    logged("asset pack \(job.key): another pack's index is not reused") { try PackIndex.read(path) }
                }
                let plan = PackPlan(target: index, installed: installed, others: others)
                let staging = try PackStaging(root: root, plan: plan)
                staging.repair = job.repair
                var needed = try staging.prepare()
                needed = try staging.copyFromInstalled(needed)
                let chunks = plan.items.map(\.chunk).filter { needed.contains($0.sha256) }
                let prepared = PackJobMachine.Prepared(
                    units: PackJob.Unit.plan(chunks, index: index), chunks: chunks.count,
                    bytesTotal: plan.totalBytes, bytesPresent: staging.bytesPresent,
                    bytesReused: plan.totalBytes - chunks.reduce(0) { $0 + Int64($1.length) })
                result = .success((PackJob.StagingBox(staging), prepared))
            } catch {
                result = .failure(PackJobMachine.failure("cannot prepare version \(index.version): \(error)", error))
            }
            executor.async { [self] in
                guard live(job) else { return }
                switch result {
                case .failure(let failure): run(job, .prepared(.failure(failure)))
                case .success(let (box, prepared)):
                    job.staging = box
                    run(job, .prepared(.success(prepared)))
                }
            }
        }
    }

    /// The publish folder's URL (the index's, less `packs/ID/N.json`), ending in `/`: the
    /// manifest's decoder made sure the index URL ends so.
    func baseURL(_ job: PackJob) -> String? {
        let suffix = PackIndex.indexPath(id: job.key.pack, version: job.entry.version)
        guard job.entry.indexURL.hasSuffix(suffix) else { return nil }
        return String(job.entry.indexURL.dropLast(suffix.count))
    }

    /// Fetches one unit through the engine straight into staging (``PackUnitSink``): each frame
    /// checked and written where the index places it as it lands, a resume asking only for the
    /// frames still needed. No copy of the unit is written.
    func fetch(_ unit: PackJob.Unit, for job: PackJob) {
        guard let box = job.staging else { return }
        guard let base = baseURL(job) else {
            let message = "the index URL \(job.entry.indexURL) does not say where the chunks are"
            run(job, .fetchFailed(unit.key, .init(message: message)))
            return
        }
        fetchSequence += 1
        // Unique per fetch: a job started again for the same version (a request, a repair) must not
        // share an id with the stopped job's fetch, whose cancellation may reach the engine later.
        let id = "\(job.key.app)/\(job.key.pack)/\(job.entry.version)/\(unit.key)/\(fetchSequence)"
        job.fetchIDs[unit.key] = id
        let log = self.log
        let key = job.key
        let sink = PackUnitSink(unit: unit, staging: box) { log("asset pack \(key): \($0)") }
        // The destination only names the fetch in the engine: nothing is written there.
        let name = fetchDirectory(app: job.key.app) + "/\(job.key.pack)-\(job.entry.version)/" + unit.key
        transfers.fetchPackFile(
            .init(
                id: id, url: base + unit.path, destination: name, expectedSize: unit.size, essential: job.essential,
                sink: sink, allowsMetered: fetchesAllowMetered(job)), for: job.app,
            progress: { [self] bytes in
                guard live(job) else { return }
                run(job, .fetchProgress(unit.key, bytes: bytes, at: clock.instant))
            }
        ) { [self] result in
            guard live(job) else { return }
            job.fetchIDs[unit.key] = nil
            if let rejection = sink.rejection {
                run(job, .rejected(unit.key, rejection))
                return
            }
            switch result {
            case .failure(let failure):
                run(
                    job,
                    .fetchFailed(
                        unit.key,
                        .init(message: failure.message, noSpace: failure.noSpace, httpStatus: failure.httpStatus)))
            case .success:
                let present = box.lock.withLock { box.staging.bytesPresent }
                run(job, .accepted(unit.key, bytesPresent: present, at: clock.instant))
            }
        }
        // Made without the metered network when it needs consent: say it waits.
        consentChanged(job)
    }

    /// Verifies every file, makes the version read-only and durable, and switches the link (on
    /// the job's queue), unless the job stopped meanwhile (``PackSwitchGate``).
    func finish(_ job: PackJob) {
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
            executor.async { [self] in run(job, .finished(result)) }
        }
    }

    /// The version is local: the row says so, the old version goes once nothing holds it.
    func recordLocal(_ job: PackJob) {
        let version = job.entry.version
        jobs[job.key] = nil
        var row = readRow(job.key) ?? PackRow(app: job.key.app, pack: job.key.pack)
        let previous = row.localVersion
        row.localVersion = version
        row.target = nil
        row.clearFailure()
        save(row)
        if job.repair { removeWhenFree(job.key, version: version, replaced: true) }
        if let previous, previous != version {
            removeWhenFree(job.key, version: previous)
            try? FileManager.default.removeItem(
                atPath: indexPath(app: job.key.app, pack: job.key.pack, version: previous))
        }
        sweepIndexParts(app: job.key.app)
        sweepFetchIfIdle(app: job.key.app)
    }

    /// The job cannot go on: its fetches stopped (the machine said so), the staging folder stays
    /// (what is verified in it is kept for the next attempt), the local version stays, and the
    /// row says why.
    func recordFailure(_ job: PackJob, _ failure: PackFailure) {
        guard jobs[job.key] === job else { return }
        jobs[job.key] = nil
        job.cancel()
        if var row = readRow(job.key) {
            row.target = nil
            row.failure = failure.message
            row.failureCode = failure.code
            row.interruptedStarts = 0
            save(row)
        }
    }
}
