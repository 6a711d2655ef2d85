import BADaemonProtocol
import BAPurge
import BAScheduling
import BASettings
import BAStore
import Foundation

/// Purgeable finished files (docs/purging.md): the owner of the tracked assets' records and of
/// the free-space check that purges under disk pressure.
///
/// It knows no other service: it is given what it needs in
/// ``init(store:containers:configuration:executor:settings:log:)`` and reports to nobody (its
/// callers get each purge's report).
final class PurgeService: @unchecked Sendable {
    let store: BAStore
    /// Where each app group's container and folder of finished files are (the roots a purge walks).
    let containers: AppContainers
    /// basd's configuration: the free-space probe, the state folder, the clock.
    let configuration: BasdServices.Configuration
    /// The executor every method runs on (a purge's report is posted to it).
    let executor: ServiceExecutor
    /// The settings in force (`automaticPurge`, `purgeFreeSpaceThresholdBytes`), read at each check.
    let settings: () -> BasdSettings
    let log: @Sendable (String) -> Void
    /// When free space was last checked against the purge threshold.
    private var lastCheck: Date?

    /// When the next free-space check is due (nil when the automatic purge is off).
    var nextCheck: Date? {
        guard settings().automaticPurge else { return nil }
        return lastCheck.map { $0.addingTimeInterval(60) } ?? configuration.clock.now
    }

    init(
        store: BAStore, containers: AppContainers, configuration: BasdServices.Configuration,
        executor: ServiceExecutor, settings: @escaping () -> BasdSettings, log: @escaping @Sendable (String) -> Void
    ) {
        self.store = store
        self.containers = containers
        self.configuration = configuration
        self.executor = executor
        self.settings = settings
        self.log = log
    }

    /// Starts tracking a finished file for purging (by its identity now: an app that moves it
    /// within the container keeps the inode). A file delivered before the app's first launch, or
    /// an essential one, is held until the app's next launch (``LaunchHold``).
    func track(finished event: StoredEvent, path: String, sha256: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        do {
            guard let download = try event.download ?? store.download(uniqueIdentifier: event.downloadUniqueIdentifier)
            else { return }
            // An app that is not registered (any more) has launched nothing: held, as its first launch.
            let launched = try store.app(download.appIdentifier)?.launched ?? false
            let hold = LaunchHold.atDelivery(essential: download.isEssential, appHasLaunched: launched)
            try store.recordAsset(
                StoredAsset(
                    downloadUniqueIdentifier: download.uniqueIdentifier, appIdentifier: download.appIdentifier,
                    identifier: download.identifier, deliveredPath: path, device: UInt64(info.st_dev),
                    inode: UInt64(info.st_ino), size: Int64(info.st_size),
                    modificationTimeNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000
                        + Int64(info.st_mtim.tv_nsec),
                    sha256: sha256.isEmpty ? (download.sha256 ?? "") : sha256, finishedAt: configuration.clock.now,
                    heldUntilLaunch: hold?.rawValue))
        } catch {
            log("tracking the finished file \(path) failed: \(error)")
        }
    }

    /// The purges asked for, one after another: a second waits for the first (executor only).
    private let purges = StepQueue()
    /// Whether a purge is walking or deleting (its thread has not reported back yet).
    var running: Bool { purges.isBusy }

    /// Plans (and unless `dryRun`, carries out) a purge of unmodified, unused finished files
    /// until free space on the state directory's file system is back over the threshold. Records
    /// of files that are gone are forgotten; so are the deleted ones. `then` gets the report on
    /// the executor.
    ///
    /// The free-space check, the walk of the containers (up to 100,000 entries) and of `/proc`,
    /// and the deletions run on a thread of their own, not on the executor: other clients are
    /// served meanwhile (issue 19). The store is read before and written after, on the executor;
    /// one purge runs at a time (``StepQueue``: a second waits for the first). A file moved or
    /// changed meanwhile is not deleted: the purger checks each file's identity again just
    /// before it deletes it.
    func purge(dryRun: Bool, then: @escaping @Sendable (Result<PurgeReport, Refusal>) -> Void) {
        executor.assertOnExecutor()
        purges.run { [self] done in
            let done = UncheckedSendable(done)
            purgeNow(dryRun: dryRun) { outcome in
                then(outcome)
                done.value()
            }
        }
    }

    /// One purge, while no other runs.
    private func purgeNow(dryRun: Bool, then: @escaping @Sendable (Result<PurgeReport, Refusal>) -> Void) {
        let input: PurgeInput
        do {
            input = try purgeInput()
        } catch {
            return then(.failure(error))
        }
        let executor = self.executor
        let freeSpace = configuration.freeSpace
        let stateDirectory = configuration.stateDirectory
        let thread = Thread { [self] in
            let outcome: Result<(PurgePlan, [PurgeResult], Int64), Refusal>
            do {
                let free = try freeSpace(stateDirectory)
                let plan = PurgePlanner().plan(
                    assets: input.assets, roots: input.roots, freeBytes: free, thresholdBytes: input.threshold)
                outcome = .success((plan, dryRun ? [] : Purger().execute(plan), free))
            } catch {
                outcome = .failure(Refusal(.internalError, "cannot read the free space of \(stateDirectory): \(error)"))
            }
            let carried = UncheckedSendable(outcome)
            executor.async { [self] in
                then(
                    carried.value.flatMap { plan, results, free in
                        Result { () throws(Refusal) in try finish(plan, results, input, free: free, dryRun: dryRun) }
                    })
            }
        }
        thread.name = "basd-purge"
        thread.start()
    }

    /// What a purge reads on the executor before it walks.
    private struct PurgeInput: @unchecked Sendable {
        var assets: [TrackedAsset]
        var roots: [String]
        var threshold: Int64
    }

    private func purgeInput() throws(Refusal) -> PurgeInput {
        do {
            let stored = try store.assets()
            let assets = stored.map {
                TrackedAsset(
                    key: FileKey(device: $0.device, inode: $0.inode), size: $0.size,
                    modificationTimeNanoseconds: $0.modificationTimeNanoseconds, sha256: $0.sha256,
                    finishedAt: $0.finishedAt, appID: $0.appIdentifier, downloadUniqueID: $0.downloadUniqueIdentifier,
                    identifier: $0.identifier, deliveredPath: $0.deliveredPath,
                    // The column admits only the known names (a CHECK); were it another, better kept.
                    heldUntilLaunch: $0.heldUntilLaunch.map { LaunchHold(rawValue: $0) ?? .firstLaunch })
            }
            let groups = Set(try store.apps().compactMap(\.appGroupIdentifier))
            // The containers, and basd's own folders of finished files not yet delivered (found
            // there, a file is pending delivery and never purged).
            let roots =
                groups.sorted().map { containers.container(group: $0) }
                + groups.sorted().map { containers.finishedDirectory(group: $0) }
            return PurgeInput(
                assets: assets, roots: roots, threshold: settings().purgeFreeSpaceThresholdBytes)
        } catch {
            throw Refusal(error)
        }
    }

    /// Logs what was done, forgets the records of files that are gone, and reports (executor).
    private func finish(
        _ plan: PurgePlan, _ results: [PurgeResult], _ input: PurgeInput, free: Int64, dryRun: Bool
    ) throws(Refusal) -> PurgeReport {
        var deleted: [String: Int64] = [:]
        var outcomes: [String: String] = [:]
        for result in results {
            switch result.outcome {
            case .deleted(let bytes):
                deleted[result.asset.downloadUniqueID] = bytes
                log("purged \(result.path) (\(result.asset.appID) \"\(result.asset.identifier)\", \(bytes) bytes)")
            case .kept(let reason):
                outcomes[result.asset.downloadUniqueID] = "kept: \(reason)"
            case .failed(let message):
                outcomes[result.asset.downloadUniqueID] = "failed: \(message)"
                log("purging \(result.path) failed: \(message)")
            }
        }
        // A file that is gone (deleted by the app, copied elsewhere, purged) is no longer tracked;
        // one past a truncated walk may only be unreached, so it stays. Nor is a modified one: it
        // is the app's now (never purged), or its inode was reused by another file, whose later
        // reports must not carry this asset's name.
        var forget = Array(deleted.keys)
        for entry in plan.entries {
            if case .modified = entry.status { forget.append(entry.asset.downloadUniqueID) }
        }
        if !plan.scanTruncated {
            forget += plan.entries.filter { $0.status == .missing }.map(\.asset.downloadUniqueID)
        }
        do {
            try store.forgetAssets(forget)
        } catch {
            throw Refusal(error)
        }
        let entries = plan.entries.map { entry in
            PurgeEntry(
                appIdentifier: entry.asset.appID, identifier: entry.asset.identifier, path: entry.path,
                size: entry.size, status: entry.status.name,
                reason: outcomes[entry.asset.downloadUniqueID] ?? entry.reason,
                wouldDelete: dryRun ? entry.willDelete : deleted[entry.asset.downloadUniqueID] != nil)
        }
        return PurgeReport(
            freeBytes: free, thresholdBytes: input.threshold, dryRun: dryRun, entries: entries,
            bytesFreed: dryRun ? plan.plannedBytes : deleted.values.reduce(0, +))
    }

    /// Purges when free space is under the threshold (at most once a minute, unless the
    /// `automaticPurge` setting is off).
    func checkFreeSpace() {
        guard settings().automaticPurge else { return }
        let now = configuration.clock.now
        if let last = lastCheck, now.timeIntervalSince(last) < 60, now >= last { return }
        lastCheck = now
        // statvfs first: the plan walks the containers and /proc, only worth it under pressure.
        let threshold = settings().purgeFreeSpaceThresholdBytes
        guard let free = try? configuration.freeSpace(configuration.stateDirectory), free < threshold else {
            return
        }
        purge(dryRun: false) { [log] outcome in
            switch outcome {
            case .success(let done):
                guard done.bytesFreed > 0 else { return }
                log("free space \(free) bytes is under \(threshold): purged \(done.bytesFreed) bytes")
            case .failure(let refusal):
                log("checking free space failed: \(refusal.message)")
            }
        }
    }

}
