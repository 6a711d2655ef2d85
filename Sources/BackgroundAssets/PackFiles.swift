internal import BADaemonProtocol
import Foundation

/// The rules of ``AssetPackManager`` that need no I/O: what a listing says about a pack (kept
/// apart to be tested as a table). The files themselves are read by ``LocalPacks``.
enum PackFiles {
    /// Whether an `ensure` answered with `info` needs no more waiting.
    static func isSatisfied(_ info: PackInfo, requireLatest: Bool) -> Bool {
        guard let local = info.localVersion else { return false }
        guard requireLatest, let server = info.serverVersion else { return true }
        return local >= server
    }

    /// Apple's status flags for a listed pack: against `version` when given, else against the
    /// version the download manifest lists.
    static func status(_ info: PackInfo, relativeTo version: Int?) -> AssetPack.Status {
        var status: AssetPack.Status = []
        if info.isDownloading { status.insert(.downloading) }
        guard let local = info.localVersion else {
            if info.serverVersion != nil { status.insert(.downloadAvailable) }
            return status
        }
        status.insert(.downloaded)
        if info.serverVersion == nil { status.insert(.obsolete) }
        let target = version ?? info.serverVersion ?? local
        if local >= target {
            status.insert(.upToDate)
        } else {
            // basd can fetch an update whenever the manifest lists one (no network is off-limits).
            status.formUnion([.outOfDate, .updateAvailable])
        }
        return status
    }

    /// What a manifest check changed: the local packs now being updated, and those removed as
    /// obsolete.
    static func changes(before: [PackInfo], after: [PackInfo]) -> (updatingIDs: Set<String>, removedIDs: Set<String>) {
        let now = Dictionary(after.map { ($0.assetPackID, $0) }, uniquingKeysWith: { first, _ in first })
        var updating: Set<String> = []
        for info in after {
            if let local = info.localVersion, let server = info.serverVersion, server > local {
                updating.insert(info.assetPackID)
            }
        }
        var removed: Set<String> = []
        for info in before where info.localVersion != nil {
            if now[info.assetPackID]?.localVersion == nil { removed.insert(info.assetPackID) }
        }
        return (updating, removed)
    }
}
