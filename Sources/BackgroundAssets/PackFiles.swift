internal import BADaemonProtocol
import Foundation

/// The rules of ``AssetPackManager`` that need no basd: where a path is in the local packs'
/// shared namespace, and what a listing says about a pack (kept apart to be tested as a table).
enum PackFiles {
    /// The absolute path of `path` in the local packs under `folder` (`CONTAINER/AssetPacks`):
    /// in `pack`'s folder when given, else in the first pack (by ID) that has it. With `files`,
    /// only a regular file counts (contents, descriptors); else a folder does too (URLs).
    static func locate(_ path: FilePath, in folder: String, pack: String?, files: Bool) throws -> String {
        // A relative path of plain names: no root, `.` or `..` (nothing outside the packs).
        guard !path.isAbsolute, !path.isEmpty, path.components.allSatisfy({ $0.kind == .regular }) else {
            throw ManagedBackgroundAssetsError.fileNotFound(at: path)
        }
        let packs: [String]
        if let pack {
            guard isLocal(pack, in: folder) else { throw ManagedBackgroundAssetsError.assetPackNotFound(withID: pack) }
            packs = [pack]
        } else {
            packs = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])
                .filter { !$0.hasPrefix(".") }.sorted()
        }
        for id in packs {
            let candidate = folder + "/" + id + "/" + path.string
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate, isDirectory: &isFolder), !(files && isFolder.boolValue)
            {
                return candidate
            }
        }
        throw ManagedBackgroundAssetsError.fileNotFound(at: path)
    }

    /// Whether `pack` is local: its link in `folder` leads to a version's folder.
    static func isLocal(_ pack: String, in folder: String) -> Bool {
        guard !pack.isEmpty, !pack.contains("/"), !pack.hasPrefix(".") else { return false }
        var isFolder: ObjCBool = false
        return FileManager.default.fileExists(atPath: folder + "/" + pack, isDirectory: &isFolder) && isFolder.boolValue
    }

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
