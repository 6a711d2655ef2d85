// BATestApp's asset-pack commands: AssetPackManager's public API, as an app uses it.
//
//   apacks                           allAssetPacks
//   apack ID                         assetPack(withID:)
//   follow ID|*                      for await over statusUpdates(forAssetPackWithID:) | statusUpdates:
//                                    one {"update": …, "follower": ID} line each, {"update": "end"} at the end
//   ensure ID [latest]               ensureLocalAvailability(of:requireLatestVersion:) (in a task: the
//                                    result line comes when it returns)
//   ensureset ID,ID…                 ensureLocalAvailability(of: Set, requireLatestVersions: false)
//   cancelprogress ID                cancel() on the last Progress a follower saw for ID
//   check                            checkForUpdates()
//   language LANG|none               resolvedLanguage = LANG (none: nil), reconcilePreferredLanguages(); the
//                                    manifest's languages and localized packs, locallyAvailableLanguages
//   readlang PATH LANG               contents(at:asLocalizedFor:)
//   read PATH [ID] | fd PATH [ID]    contents(at:searchingInAssetPackWithID:) | descriptor(for:…), read, close
//   url PATH                         url(for:)
//   local ID                         assetPackIsAvailableLocally(withID:) and localStatus(ofAssetPackWithID:)
//   relstatus ID VERSION             status(relativeTo:) of that version
//   lversion ID | lsize ID METHOD    localVersion(ofAssetPackWithID:) | localSize(…, calculationMethod: logical|allocated)
//   removepack ID                    remove(assetPackWithID:)
//   estimate ID                      downloadEstimate(for:) (Linux addition)
import BackgroundAssets
import Foundation

let progressLock = NSLock()
nonisolated(unsafe) var progresses: [String: Progress] = [:]

func describe(_ pack: AssetPack) -> [String: Any] {
    [
        "id": pack.id, "version": pack.version, "downloadSize": pack.downloadSize,
        "userInfo": pack.userInfo.map { String(decoding: $0, as: UTF8.self) } ?? NSNull(),
    ]
}

func describe(_ update: AssetPackManager.DownloadStatusUpdate, follower: String) -> [String: Any] {
    var line: [String: Any] = ["follower": follower]
    switch update {
    case .began(let pack): line.merge(["update": "began", "pack": pack.id, "version": pack.version]) { a, _ in a }
    case .paused(let pack): line.merge(["update": "paused", "pack": pack.id]) { a, _ in a }
    case .downloading(let pack, let progress):
        progressLock.withLock { progresses[pack.id] = progress }
        line.merge([
            "update": "downloading", "pack": pack.id, "completed": progress.completedUnitCount,
            "total": progress.totalUnitCount,
        ]) { a, _ in a }
    case .finished(let pack):
        line.merge(["update": "finished", "pack": pack.id, "version": pack.version]) { a, _ in a }
    case .failed(let pack, let error):
        line.merge(["update": "failed", "pack": pack.id, "error": describe(error)]) { a, _ in a }
    }
    return line
}

/// Runs `body` in a task and prints its result line as `command` when it ends.
func later(_ command: String, _ body: @escaping @Sendable () async throws -> [String: Any]) {
    Task {
        do {
            emit(["command": command, "ok": true].merging(try await body()) { a, _ in a })
        } catch {
            emit(["command": command, "ok": false, "error": describe(error)])
        }
    }
}

/// The OS 26 lookups, deprecated in OS 27 and still Apple's: this app tests that they keep
/// working, so it calls them through a protocol they satisfy (a build without warnings).
protocol DeprecatedPackLookups: Actor {
    var allAssetPacks: Set<AssetPack> { get async throws }
    func assetPack(withID assetPackID: String) async throws -> AssetPack
}

extension AssetPackManager: DeprecatedPackLookups {}

func runPackCommand(_ words: [String]) -> Bool {
    let manager = AssetPackManager.shared
    let deprecated: any DeprecatedPackLookups = manager
    let command = words[0]
    switch (command, words.count) {
    case ("apacks", 1):
        later(command) { ["packs": try await deprecated.allAssetPacks.sorted { $0.id < $1.id }.map(describe)] }
    case ("language", 2):
        // Sets the app's language ("none": back to the user's), then reconciles.
        later(command) {
            manager.resolvedLanguage = words[1] == "none" ? nil : Locale.Language(identifier: words[1])
            try await manager.reconcilePreferredLanguages()
            let manifest = try await manager.manifest
            return [
                "resolved": manager.resolvedLanguage?.minimalIdentifier ?? "none",
                "local": await manager.locallyAvailableLanguages.map(\.minimalIdentifier),
                "available": manifest.availableLanguages.map(\.minimalIdentifier),
                "localized": manifest.localizedAssetPacks.map(\.id).sorted(),
                "languages": Dictionary(
                    manifest.assetPacks.map { ($0.id, $0.language?.minimalIdentifier ?? "none") },
                    uniquingKeysWith: { a, _ in a }),
            ]
        }
    case ("readlang", 3):
        later(command) {
            let data = try manager.contents(
                at: FilePath(words[1]), asLocalizedFor: Locale.Language(identifier: words[2]))
            return ["size": data.count]
        }
    case ("apack", 2):
        later(command) { describe(try await deprecated.assetPack(withID: words[1])) }
    case ("follow", 2):
        let id = words[1]
        if id == "*" {
            Task {
                // Listening (the iterator made) before the command's result line says so.
                var updates = await manager.statusUpdates.makeAsyncIterator()
                emit(["command": command, "ok": true, "follower": id])
                while let update = await updates.next(isolation: #isolation) { emit(describe(update, follower: id)) }
            }
            return true
        } else {
            // Made here, before the task runs: it has every update from this moment.
            let updates = manager.statusUpdates(forAssetPackWithID: id)
            Task {
                for await update in updates { emit(describe(update, follower: id)) }
                emit(["update": "end", "follower": id])
            }
        }
        emit(["command": command, "ok": true, "follower": id])
    case ("ensure", 2...):
        later(command) {
            let pack = try await deprecated.assetPack(withID: words[1])
            try await manager.ensureLocalAvailability(of: pack, requireLatestVersion: words.contains("latest"))
            return ["pack": words[1], "available": manager.assetPackIsAvailableLocally(withID: words[1])]
        }
    case ("ensureset", 2):
        later(command) {
            var packs: Set<AssetPack> = []
            for id in words[1].split(separator: ",") {
                packs.insert(try await deprecated.assetPack(withID: String(id)))
            }
            do {
                try await manager.ensureLocalAvailability(of: packs, requireLatestVersions: false)
                return [:]
            } catch let error as AssetPackManager.LocalAvailabilityError {
                return [
                    "successes": error.successes.map(\.id).sorted(),
                    "failures": error.failures.keys.map(\.id).sorted(),
                ]
            }
        }
    case ("cancelprogress", 2):
        let progress = progressLock.withLock { progresses[words[1]] }
        progress?.cancel()
        emit(["command": command, "ok": progress != nil])
    case ("check", 1):
        later(command) {
            let (updating, removed) = try await manager.checkForUpdates()
            return ["updating": updating.sorted(), "removed": removed.sorted()]
        }
    case ("read", 2...), ("fd", 2...):
        let path = FilePath(words[1])
        let pack = words.count > 2 ? words[2] : nil
        do {
            let data: Data
            if command == "read" {
                data = try manager.contents(at: path, searchingInAssetPackWithID: pack)
            } else {
                let descriptor = try manager.descriptor(for: path, searchingInAssetPackWithID: pack)
                defer { try? descriptor.close() }
                var bytes = [UInt8](repeating: 0, count: 1 << 20)
                var all = Data()
                while true {
                    let count = try bytes.withUnsafeMutableBytes { try descriptor.read(into: $0) }
                    if count == 0 { break }
                    all.append(contentsOf: bytes[0..<count])
                }
                data = all
            }
            emit(["command": command, "ok": true, "size": data.count, "sha256": sha256(data)])
        } catch {
            emit(["command": command, "ok": false, "error": describe(error)])
        }
    case ("url", 2):
        do {
            emit(["command": command, "ok": true, "path": try manager.url(for: FilePath(words[1])).path])
        } catch {
            emit(["command": command, "ok": false, "error": describe(error)])
        }
    case ("local", 2):
        later(command) {
            let status = await manager.localStatus(ofAssetPackWithID: words[1])
            return ["available": manager.assetPackIsAvailableLocally(withID: words[1]), "status": status.rawValue]
        }
    case ("lversion", 2):
        later(command) { ["version": try manager.localVersion(ofAssetPackWithID: words[1])] }
    case ("lsize", 3):
        later(command) {
            let method: SizeCalculationMethod = words[2] == "allocated" ? .allocated : .logical
            return ["size": try await manager.localSize(ofAssetPackWithID: words[1], calculationMethod: method)]
        }
    case ("relstatus", 3):
        later(command) {
            let pack = AssetPack(id: words[1], version: Int(words[2]) ?? 0, downloadSize: 0)
            return ["status": try await manager.status(relativeTo: pack).rawValue]
        }
    case ("estimate", 2):
        later(command) {
            let estimate = try await manager.downloadEstimate(
                for: AssetPack(id: words[1], version: 0, downloadSize: 0))
            return [
                "fetch": estimate.bytesToFetch.map { Int($0) as Any } ?? NSNull(),
                "write": estimate.bytesToWrite.map { Int($0) as Any } ?? NSNull(),
                "waits": estimate.waitsForMeteredNetwork,
            ]
        }
    case ("removepack", 2):
        later(command) {
            try await manager.remove(assetPackWithID: words[1])
            return [:]
        }
    default:
        return false
    }
    return true
}
