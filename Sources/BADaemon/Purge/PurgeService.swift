import BADaemonProtocol
import BAPurge
import BAStore
import Foundation

/// Purgeable finished files (docs/purging.md): the owner of the tracked assets' records and of
/// the free-space check that purges under disk pressure.
final class PurgeService: @unchecked Sendable {
    unowned let services: BasdServices
    /// When free space was last checked against the purge threshold.
    private var lastCheck: Date?

    /// When the next free-space check is due (nil when the automatic purge is off).
    var nextCheck: Date? {
        guard services.settings.current.automaticPurge else { return nil }
        return lastCheck.map { $0.addingTimeInterval(60) } ?? services.clock.now
    }

    init(_ services: BasdServices) {
        self.services = services
    }

    private var store: BAStore { services.store }
    private var log: @Sendable (String) -> Void { services.log }
    private var configuration: BasdServices.Configuration { services.configuration }

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
                    modificationTimeNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000
                        + Int64(info.st_mtim.tv_nsec),
                    sha256: sha256.isEmpty ? (download.sha256 ?? "") : sha256, finishedAt: services.clock.now))
        } catch {
            log("tracking the finished file \(path) failed: \(error)")
        }
    }

    /// Plans (and unless `dryRun`, carries out) a purge of unmodified, unused finished files
    /// until free space on the state directory's file system is back over the threshold. Records
    /// of files that are gone are forgotten; so are the deleted ones.
    func purge(dryRun: Bool) throws -> PurgeReport {
        let stored = try store.assets()
        let assets = stored.map {
            TrackedAsset(
                key: FileKey(device: $0.device, inode: $0.inode), size: $0.size,
                modificationTimeNanoseconds: $0.modificationTimeNanoseconds, sha256: $0.sha256,
                finishedAt: $0.finishedAt, appID: $0.appIdentifier, downloadUniqueID: $0.downloadUniqueIdentifier,
                identifier: $0.identifier, deliveredPath: $0.deliveredPath)
        }
        let groups = Set(try store.apps().compactMap(\.appGroupIdentifier))
        // The containers, and basd's own folders of finished files not yet delivered (found
        // there, a file is pending delivery and never purged).
        let roots =
            groups.sorted().map { services.containers.container(group: $0) }
            + groups.sorted().map { services.containers.finishedDirectory(group: $0) }
        let free: Int64
        do {
            free = try configuration.freeSpace(configuration.stateDirectory)
        } catch {
            throw Refusal(.internalError, "cannot read the free space of \(configuration.stateDirectory): \(error)")
        }
        let plan = PurgePlanner().plan(
            assets: assets, roots: roots, freeBytes: free,
            thresholdBytes: services.settings.current.purgeFreeSpaceThresholdBytes)
        var deleted: [String: Int64] = [:]
        var outcomes: [String: String] = [:]
        if !dryRun {
            for result in Purger().execute(plan) {
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
        try store.forgetAssets(forget)
        let entries = plan.entries.map { entry in
            PurgeEntry(
                appIdentifier: entry.asset.appID, identifier: entry.asset.identifier, path: entry.path,
                size: entry.size, status: entry.status.name,
                reason: outcomes[entry.asset.downloadUniqueID] ?? entry.reason,
                wouldDelete: dryRun ? entry.willDelete : deleted[entry.asset.downloadUniqueID] != nil)
        }
        return PurgeReport(
            freeBytes: free, thresholdBytes: services.settings.current.purgeFreeSpaceThresholdBytes, dryRun: dryRun,
            entries: entries,
            bytesFreed: dryRun ? plan.plannedBytes : deleted.values.reduce(0, +))
    }
    /// Purges when free space is under the threshold (at most once a minute, unless the
    /// `automaticPurge` setting is off).
    func checkFreeSpace() {
        guard services.settings.current.automaticPurge else { return }
        let now = services.clock.now
        if let last = lastCheck, now.timeIntervalSince(last) < 60, now >= last { return }
        lastCheck = now
        do {
            // statvfs first: the plan walks the containers and /proc, only worth it under pressure.
            let threshold = services.settings.current.purgeFreeSpaceThresholdBytes
            guard let free = try? configuration.freeSpace(configuration.stateDirectory), free < threshold else {
                return
            }
            let done = try purge(dryRun: false)
            guard done.bytesFreed > 0 else { return }
            log("free space \(free) bytes is under \(threshold): purged \(done.bytesFreed) bytes")
        } catch {
            log("checking free space failed: \(error)")
        }
    }

}
