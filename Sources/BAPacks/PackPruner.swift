import BAPackManifest
import Foundation

/// `ba pack prune`: removes from a publish folder what no kept version references, so that the
/// folder does not grow by a version's bundles with every publish.
///
/// Kept: the newest `keep` versions of each pack, and whatever version the folder's current
/// `manifest.json` lists (a `--downgrade` pin included), with everything their indexes reference:
/// the index, its parts (format 2), its bundles and its chunks. Removed: the other versions'
/// indexes, then the bundles, index parts and chunks no kept index references, and only those
/// last written more than `grace` ago (a `ba pack build` in progress writes chunks before its
/// index; a CDN may still serve an older manifest for a while). A manifest or a kept index that
/// cannot be read stops the prune before anything is removed: then nothing is known to be unused.
package enum PackPruner {
    /// What a prune removed (or, with `dryRun`, would remove).
    package struct Report: Sendable, Hashable {
        /// The versions kept, by pack.
        package var kept: [String: [Int]] = [:]
        /// Paths removed, relative to the publish folder, indexes first.
        package var removed: [String] = []
        /// Their bytes.
        package var bytesFreed: Int64 = 0
        /// Unreferenced files left because they are younger than the grace period.
        package var young = 0
    }

    package static func prune(
        _ publishDirectory: String, keep: Int, grace: TimeInterval = 3600, dryRun: Bool = false,
        now: Date = Date()
    ) throws(PackError) -> Report {
        guard keep >= 1 else { throw PackError("--keep must be 1 or more: the newest version is always kept") }
        let manager = FileManager.default
        let pinned = try manifestVersions(publishDirectory)
        var report = Report()
        var referenced: Set<String> = []
        var staleIndexes: [String] = []
        let packs = publishDirectory + "/packs"
        // Every listing that fails stops the prune: a folder read as empty would leave what it
        // references unreferenced.
        for id in try PackFileSystem.names(in: packs, missingIsEmpty: true) where !id.hasPrefix(".") {
            let versions = try PackFileSystem.names(in: packs + "/" + id)
                .compactMap { $0.hasSuffix(".json") ? Int($0.dropLast(5)) : nil }.sorted()
            var kept = Set(versions.suffix(keep))
            if let version = pinned[id] {
                guard versions.contains(version) else {
                    throw PackError(
                        "manifest.json lists \(id) version \(version), which \(packs)/\(id) does not hold: nothing is removed"
                    )
                }
                kept.insert(version)
            }
            report.kept[id] = kept.sorted()
            for version in versions {
                let relative = PackIndex.indexPath(id: id, version: version)
                guard kept.contains(version) else {
                    staleIndexes.append(relative)
                    continue
                }
                try reference(relative, in: publishDirectory, into: &referenced)
            }
        }
        if report.kept.isEmpty { throw PackError("\(packs) holds no pack indexes: nothing to prune") }
        for (id, version) in pinned where report.kept[id] == nil {
            throw PackError(
                "manifest.json lists \(id) version \(version), which \(packs) does not hold: nothing is removed")
        }
        // Indexes first: no index is left that names a removed file.
        var candidates = staleIndexes
        for id in report.kept.keys.sorted() {
            let names = try PackFileSystem.names(in: packs + "/" + id)
            candidates += names.filter { $0.hasSuffix(".bundle") }.map { "packs/\(id)/\($0)" }
        }
        for store in ["meta", "chunks"] {
            let top = publishDirectory + "/" + store
            for prefix in try PackFileSystem.names(in: top, missingIsEmpty: true) where !prefix.hasPrefix(".") {
                let names = try PackFileSystem.names(in: top + "/" + prefix)
                candidates += names.filter { !$0.hasPrefix(".") }.map { "\(store)/\(prefix)/\($0)" }
            }
        }
        for relative in candidates where !referenced.contains(relative) {
            let path = publishDirectory + "/" + relative
            guard let info = PackFileSystem.status(atPath: path, followLinks: false), info.type == .regular else {
                continue
            }
            // Within the grace period, or of an age that cannot be told: kept (only an index of a
            // version not kept goes whatever its age).
            let modified = (try? manager.attributesOfItem(atPath: path))?[.modificationDate] as? Date
            if !relative.hasSuffix(".json"), modified.map({ now.timeIntervalSince($0) < grace }) ?? true {
                report.young += 1
                continue
            }
            if !dryRun {
                do { try manager.removeItem(atPath: path) } catch {
                    throw PackError("cannot remove \(path): \(error.localizedDescription)")
                }
            }
            report.removed.append(relative)
            report.bytesFreed += info.size
        }
        return report
    }

    /// Adds what the index at `relative` references (itself, its parts, bundles and chunks).
    private static func reference(
        _ relative: String, in publishDirectory: String, into referenced: inout Set<String>
    ) throws(PackError) {
        let path = publishDirectory + "/" + relative
        let index: PackIndex
        let document: PackIndex.Document
        do { (index, document) = try PackIndex.readWithDocument(path) } catch {
            throw PackError("a kept version's index cannot be read, so nothing is removed: \(error)")
        }
        referenced.insert(relative)
        if case .tree(let root) = document {
            for part in root.parts { referenced.insert(PackIndexRoot.partPath(part.sha256)) }
        }
        for bundle in index.bundles ?? [] { referenced.insert(bundle.path) }
        for file in index.files {
            for chunk in file.chunks { referenced.insert(PackIndex.chunkPath(chunk.sha256)) }
        }
    }

    /// The version of each pack the folder's `manifest.json` lists (none without one); a
    /// manifest that cannot be read is an error: what it references is not known.
    private static func manifestVersions(_ publishDirectory: String) throws(PackError) -> [String: Int] {
        let manifest: PackPublisher.DownloadManifest
        do {
            guard let current = try PackPublisher.currentManifest(publishDirectory) else { return [:] }
            manifest = current
        } catch {
            throw PackError("what devices are told to fetch is not known, so nothing is removed: \(error)")
        }
        return Dictionary(
            manifest.assetPacks.map { ($0.assetPackID, $0.version) }, uniquingKeysWith: { first, _ in first })
    }
}
