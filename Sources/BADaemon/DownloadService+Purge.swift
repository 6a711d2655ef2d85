import BADaemonProtocol
import BAPurge
import BAStore
import Foundation

// Purgeable finished files (docs/purging.md), on the service queue.
extension DownloadService {
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
        let roots = groups.sorted().map { containers.container(group: $0) }
        let free: Int64
        do {
            free = try configuration.freeSpace(configuration.stateDirectory)
        } catch {
            throw Refusal(.internalError, "cannot read the free space of \(configuration.stateDirectory): \(error)")
        }
        let plan = PurgePlanner().plan(
            assets: assets, roots: roots, freeBytes: free, thresholdBytes: settingsFile.settings.purgeFreeSpaceThresholdBytes)
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
        // one past a truncated walk may only be unreached, so it stays.
        var forget = Array(deleted.keys)
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
            freeBytes: free, thresholdBytes: settingsFile.settings.purgeFreeSpaceThresholdBytes, dryRun: dryRun, entries: entries,
            bytesFreed: dryRun ? plan.plannedBytes : deleted.values.reduce(0, +))
    }
}
