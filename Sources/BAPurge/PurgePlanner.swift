import Foundation

/// Decides which finished assets to delete when free space runs low.
///
/// Under the threshold, it deletes purgeable assets (unmodified, delivered, not held until the
/// app's next launch, not open by any process: see ``AssetStatus``) least recently used first, until the bytes freed bring free space
/// back to the threshold or none are left. Over it, it deletes nothing, but still reports every
/// asset's status (what `ba purge --dry-run` shows).
///
/// ```swift
/// let planner = PurgePlanner()
/// let free = try PurgePlanner.freeBytes(path: stateDirectory)
/// let plan = planner.plan(assets: tracked, roots: containers, freeBytes: free,
///                         thresholdBytes: PurgePlanner.defaultThresholdBytes)
/// let results = Purger().execute(plan)
/// ```
package struct PurgePlanner: Sendable {
    /// 1 GiB: basd's default for its `purgeFreeSpaceThresholdBytes` setting.
    package static let defaultThresholdBytes: Int64 = 1 << 30

    /// Finds the assets in the containers.
    package var locator: AssetLocator
    /// Finds the processes that have them open.
    package var openFiles: OpenFiles

    /// Creates a planner.
    package init(locator: AssetLocator = AssetLocator(), openFiles: OpenFiles = OpenFiles()) {
        self.locator = locator
        self.openFiles = openFiles
    }

    /// The status of every asset, and which to delete to bring free space back to the threshold.
    ///
    /// Walks `roots` (the app group containers) once for all assets, and scans `/proc` once for
    /// the ones that are otherwise purgeable. The result is a snapshot: ``Purger`` checks each file
    /// again just before deleting it.
    ///
    /// - Parameters:
    ///   - assets: The finished assets basd recorded.
    ///   - roots: The app group containers to look in (`STATE/groups/GROUP`).
    ///   - freeBytes: The free space now, usually ``freeBytes(path:)`` of the filesystem holding
    ///     the containers.
    ///   - thresholdBytes: The free space to restore.
    package func plan(assets: [TrackedAsset], roots: [String], freeBytes: Int64, thresholdBytes: Int64) -> PurgePlan {
        let located = locator.locate(assets, roots: roots)
        let candidates = assets.compactMap { asset -> FileKey? in
            if case .purgeable = Self.status(of: asset, files: located.files(of: asset), openBy: []) {
                return asset.key
            }
            return nil
        }
        let open = openFiles.scan(for: Set(candidates))

        var entries = assets.map { asset in
            let files = located.files(of: asset)
            let status = Self.status(of: asset, files: files, openBy: open.pids(of: asset.key))
            // A file that differs from the record may not be the asset at all (the asset was
            // deleted and a new file got its inode): it is reported with the asset's own size,
            // never the stranger's.
            let size: Int64 =
                if case .modified = status { asset.size } else { files.first?.identity.size ?? asset.size }
            return PurgePlan.Entry(
                asset: asset, status: status, path: files.first?.path, size: size,
                reason: Self.reason(
                    for: status, asset: asset, truncatedAfter: located.truncated ? located.entriesVisited : nil),
                willDelete: false)
        }

        var purgeable: [(index: Int, lastUsed: Date)] = []
        var purgeableBytes: Int64 = 0
        var seen = Set<FileKey>()
        for (index, entry) in entries.enumerated() {
            // Two records of one file (an inode reused while basd kept a stale record) count once.
            guard case .purgeable(_, let size, let lastUsed) = entry.status, seen.insert(entry.asset.key).inserted
            else { continue }
            purgeable.append((index, lastUsed))
            purgeableBytes += size
        }
        purgeable.sort { a, b in
            if a.lastUsed != b.lastUsed { return a.lastUsed < b.lastUsed }
            let (x, y) = (entries[a.index], entries[b.index])
            if x.asset.finishedAt != y.asset.finishedAt { return x.asset.finishedAt < y.asset.finishedAt }
            return (x.path ?? "") < (y.path ?? "")
        }

        let bytesNeeded = max(0, thresholdBytes - freeBytes)
        var plannedBytes: Int64 = 0
        var deletions: [PurgePlan.Entry] = []
        for candidate in purgeable where plannedBytes < bytesNeeded {
            entries[candidate.index].willDelete = true
            plannedBytes += entries[candidate.index].size
            deletions.append(entries[candidate.index])
        }
        return PurgePlan(
            entries: entries, freeBytes: freeBytes, thresholdBytes: thresholdBytes, bytesNeeded: bytesNeeded,
            plannedBytes: plannedBytes, purgeableBytes: purgeableBytes, scanTruncated: located.truncated,
            deletions: deletions)
    }

    /// The bytes an unprivileged process may still write on the filesystem holding `path`:
    /// `f_bavail * f_frsize` (the blocks reserved for root are not counted).
    ///
    /// - Throws: ``PurgeError/Code/system`` when `statvfs` fails. The corresponding C function is `statvfs`.
    package static func freeBytes(path: String) throws(PurgeError) -> Int64 {
        var info = statvfs()
        var result: Int32
        repeat { result = statvfs(path, &info) } while result != 0 && errno == EINTR
        guard result == 0 else { throw .system("statvfs", path: path, errno: errno) }
        let (bytes, overflow) = UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        return overflow || bytes > UInt64(Int64.max) ? Int64.max : Int64(bytes)
    }

    /// An asset's status from where it was found and who has it open.
    static func status(of asset: TrackedAsset, files: [AssetLocator.LocatedFile], openBy pids: [Int32]) -> AssetStatus {
        guard let file = files.first else { return .missing }
        if let undelivered = files.first(where: { isInternal($0.path, asset: asset) }) {
            return .pendingDelivery(path: undelivered.path)
        }
        let identity = file.identity
        if identity.size != asset.size || identity.modificationTimeNanoseconds != asset.modificationTimeNanoseconds {
            return .modified(
                AssetStatus.Modification(
                    recordedSize: asset.size, size: identity.size,
                    recordedModificationTimeNanoseconds: asset.modificationTimeNanoseconds,
                    modificationTimeNanoseconds: identity.modificationTimeNanoseconds))
        }
        // Before the open-file check: a held file is kept whoever has it open, and is not worth
        // a scan of /proc.
        if let hold = asset.heldUntilLaunch { return .awaitingLaunch(path: file.path, hold: hold) }
        if !pids.isEmpty { return .inUse(pids: pids) }
        let accessed = PurgeDates.date(nanoseconds: identity.accessTimeNanoseconds)
        return .purgeable(path: file.path, size: identity.size, lastUsed: max(accessed, asset.finishedAt))
    }

    /// Whether `path` is the delivery path or anywhere in a container's internal folder.
    static func isInternal(_ path: String, asset: TrackedAsset) -> Bool {
        path == asset.deliveredPath || path.split(separator: "/").contains(".background-assets")
    }

    /// The reason a person reads for a status.
    static func reason(for status: AssetStatus, asset: TrackedAsset, truncatedAfter entries: Int?) -> String {
        switch status {
        case .purgeable(_, _, let lastUsed):
            "purgeable: unmodified since it finished \(PurgeDates.day(asset.finishedAt)), last used \(PurgeDates.day(lastUsed))"
        case .modified(let modification):
            "kept: modified (\(modification)), or its inode now holds another file"
        case .inUse(let pids):
            "kept: open by \(pids.count == 1 ? "pid" : "pids") \(pids.map(String.init).joined(separator: ", "))"
        case .pendingDelivery:
            "kept: not yet delivered to the app"
        case .awaitingLaunch(_, let hold):
            hold.reason
        case .missing:
            if let entries {
                "gone or not reached: not found in the first \(entries) entries of the app group containers"
            } else {
                "gone: no longer in the app group container"
            }
        }
    }
}
