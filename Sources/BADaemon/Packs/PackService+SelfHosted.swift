import BACore
import BADaemonProtocol
import BAHashing
import BAPacks
import BAStore
import Foundation

/// What the pack service tells of a self-hosted pack download (``PackService/startSelfHosted(_:app:)``),
/// for the transfer coordinator to record as it records an engine's transfer.
enum SelfHostedPackReport: Sendable, Equatable {
    case began
    case progress(bytes: Int64, total: Int64?)
    /// The pack is in place: `path` is where the app reads it (`CONTAINER/AppAssetPacks/APP/ID`).
    case finished(path: String, size: Int64)
    case failed(PackFailure)
}

/// What a self-hosted pack download does, given the version its index names and the version in
/// place: the rule of ``PackService/startSelfHosted(_:app:)``, I/O-free (`SelfHostedPackTests`).
enum SelfHostedPackPlan: Equatable, Sendable {
    /// Install (or update to) the index's version.
    case install
    /// That version is in place already: the download finishes without fetching a chunk.
    case alreadyLocal
    /// The index names an older version than the one in place: refused (a stale or replayed
    /// manifest must not take the pack back).
    case refuseOlder(local: Int)

    static func plan(indexVersion: Int, localVersion: Int?) -> SelfHostedPackPlan {
        guard let local = localVersion else { return .install }
        if indexVersion == local { return .alreadyLocal }
        return indexVersion < local ? .refuseOlder(local: local) : .install
    }
}

// Asset packs of a self-hosted manifest (issue 35, Apple's OS 26 `AssetPackManifest`): an app that
// manages its packs itself (no `BAHasManagedAssetPacks`) schedules `AssetPack.download(for:)`, a
// download whose URL is the pack's index and whose SHA-256 is the index's. The transfer window
// admits it as any download; here it becomes a pack job like a managed pack's (delta, staging,
// verification, the atomic switch), its files in basd's folder and read through the app group's
// `AppAssetPacks/APP/ID` (and `AssetPacks/ID`) links, and its end is the download's end.
extension PackService {
    /// Installs the pack a self-hosted pack download names: its index fetched and checked against
    /// the download's SHA-256 (and its pack ID against the download's identifier), then the
    /// version the index names installed, or the download finished at once when it is in place.
    /// What happens is reported through ``PackServiceDelegate/packs(_:selfHostedDownload:report:)``.
    func startSelfHosted(_ download: StoredDownload, app: StoredApp) {
        let id = download.uniqueIdentifier
        let key = Key(app: app.bundleIdentifier, pack: download.identifier)
        let managed: Bool
        do { managed = try store.packApps().contains { $0.appIdentifier == app.bundleIdentifier } } catch {
            // Fail closed: which packs the manifest check owns is not known.
            selfHostedEnded(id, .failed(PackFailure("basd could not read the apps with asset packs: \(error)")))
            return
        }
        guard !managed else {
            selfHostedEnded(
                id,
                .failed(
                    PackFailure(
                        "\(app.bundleIdentifier) lets basd manage its asset packs (BAHasManagedAssetPacks): its packs come from its download manifest through AssetPackManager, not from AssetPack.download(for:)",
                        code: AppleErrorCode.downloadInvalid.rawValue)))
            return
        }
        guard let sha256 = download.sha256 else {
            selfHostedEnded(id, .failed(PackFailure("the pack download has no index SHA-256")))
            return
        }
        selfHosted[key] = id
        delegate?.packs(self, selfHostedDownload: id, report: .began)
        // Not the `.fetch` folder, which the start's clean-up and an idle app's sweep empty: a
        // folder of their own, each fetch named by its download (one left by a kill is replaced
        // by the download's next attempt, and goes with the app).
        let directory = containers.packRoot(app: key.app) + "/.self-hosted"
        do { try Self.makeDirectories(directory) } catch {
            selfHostedEnded(id, .failed(PackFailure("cannot create \(directory): \(error)")))
            return
        }
        fetchSequence += 1
        transfers.fetchPackFile(
            .init(
                id: "\(key.app)/self-hosted-index/\(fetchSequence)", url: download.url,
                destination: directory + "/\(id).json",
                byteLimit: Int64(PackLimits.maximumIndexBytes), essential: true,
                allowsMetered: download.download.allowsExpensiveNetworkAccess), for: app
        ) { [self] result in
            guard selfHosted[key] == id else {
                if case .success(let path) = result { unlink(path) }
                return
            }
            switch result {
            case .failure(let failure):
                selfHostedEnded(
                    id, .failed(PackFailure("cannot fetch the pack's index \(download.url): \(failure.message)")))
            case .success(let path):
                defer { unlink(path) }
                switch Self.readSelfHostedIndex(path, sha256: sha256, url: download.url, pack: key.pack) {
                case .failure(let failure): selfHostedEnded(id, .failed(failure))
                case .success(let found): install(found.version, bytes: found.bytes, of: download, key: key, app: app)
                }
            }
        }
    }

    /// The download was cancelled (or the window stopped it): its job stops, what is verified in
    /// staging stays for a later download of the same version.
    func stopSelfHosted(_ uniqueIdentifier: String) {
        guard let key = selfHosted.first(where: { $0.value == uniqueIdentifier })?.key else { return }
        selfHosted[key] = nil
        guard jobs[key] != nil else { return }
        stopJob(key)
        if var row = readRow(key), row.target != nil {
            row.target = nil
            save(row)
        }
        log("asset pack \(key): its self-hosted download \(uniqueIdentifier) stopped")
    }

    /// Tells the download's end, once.
    private func selfHostedEnded(_ id: String, _ report: SelfHostedPackReport) {
        if let key = selfHosted.first(where: { $0.value == id })?.key { selfHosted[key] = nil }
        delegate?.packs(self, selfHostedDownload: id, report: report)
    }

    /// The index at `path` as the download promises it: its SHA-256, and the pack it names.
    private static func readSelfHostedIndex(
        _ path: String, sha256: String, url: String, pack: String
    ) -> Result<(version: Int, bytes: [UInt8]), PackFailure> {
        let bytes: [UInt8]
        do { bytes = try RegularFile.read(path, limit: PackLimits.maximumIndexBytes) } catch {
            return .failure(PackFailure("cannot read the fetched index: \(error)"))
        }
        let actual = bytes.withUnsafeBytes { SHA256Hasher.hex(of: $0) }
        guard actual == sha256.lowercased() else {
            return .failure(
                PackFailure(
                    "the index at \(url) has SHA-256 \(actual), not the \(sha256) the manifest gives: the CDN serves another file, or the manifest is stale; publish again",
                    code: PackJobMachine.invalidMetadataCode))
        }
        let version: Int
        let named: String
        do throws(PackError) {
            switch try PackIndex.Document.decode(bytes) {
            case .whole(let index): (version, named) = (index.version, index.id)
            case .tree(let root): (version, named) = (root.version, root.id)
            }
        } catch {
            return .failure(
                PackFailure("the index at \(url) is refused: \(error)", code: PackJobMachine.invalidMetadataCode))
        }
        guard named == pack else {
            return .failure(
                PackFailure(
                    "the index at \(url) is pack \"\(named)\"'s, not \"\(pack)\"'s: the manifest's url is wrong",
                    code: PackJobMachine.invalidMetadataCode))
        }
        return .success((version, bytes))
    }

    /// Installs `version` (its index `bytes` kept where the job looks first), or finishes at once.
    private func install(_ version: Int, bytes: [UInt8], of download: StoredDownload, key: Key, app: StoredApp) {
        let id = download.uniqueIdentifier
        var row: PackRow
        do { row = try self.row(key) ?? PackRow(app: key.app, pack: key.pack) } catch {
            selfHostedEnded(id, .failed(PackFailure("basd could not read its asset packs: \(error)")))
            return
        }
        switch SelfHostedPackPlan.plan(indexVersion: version, localVersion: row.localVersion) {
        case .refuseOlder(let local):
            selfHostedEnded(
                id,
                .failed(
                    PackFailure(
                        "the manifest names version \(version) of \(key.pack), older than version \(local) in place: a self-hosted manifest cannot take a pack back (it is stale or replayed)",
                        code: PackJobMachine.invalidMetadataCode)))
            return
        case .alreadyLocal:
            // A job left for another version (resumed at start) is not what this download asks.
            if jobs[key] != nil {
                stopJob(key)
                row.target = nil
                save(row)
            }
            log("asset pack \(key): version \(version) is in place already")
            finishSelfHosted(key, id: id, size: download.expectedSize ?? 0)
            return
        case .install:
            break
        }
        let entry = Entry(
            assetPackID: key.pack, version: version, downloadSize: download.expectedSize ?? 0,
            // Never started by basd on its own (install, update, periodic): only a download asks.
            downloadPolicy: .onDemand, indexURL: download.url, indexSHA256: download.sha256?.lowercased() ?? "")
        if let problem = linkNamespace(group: app.appGroupIdentifier ?? "", including: key.app) {
            selfHostedEnded(id, .failed(PackFailure(problem)))
            return
        }
        let path = indexPath(app: key.app, pack: key.pack, version: version)
        do {
            try Self.makeDirectories((path as NSString).deletingLastPathComponent)
            try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            // The job fetches it again.
            log("asset pack \(key): cannot keep the index at \(path): \(error)")
        }
        row.entry = entry
        row.target = entry
        row.clearFailure()
        save(row)
        let urgent = download.isEssential || download.isForeground
        if let job = jobs[key], job.entry.version == version {
            // Resumed at start (``resume()``) before the download came back: it is this one.
            if urgent { job.essential = true }
            return
        }
        stopJob(key)
        startJob(key, app: app, entry: entry, essential: urgent)
    }

    /// The pack's download ends with the pack's job (``send(_:)`` calls it with every event).
    func reportSelfHosted(_ event: PackEvent) {
        let key = Key(app: event.appIdentifier, pack: event.assetPackID)
        guard let id = selfHosted[key] else { return }
        switch event.kind {
        case .progress:
            delegate?.packs(
                self, selfHostedDownload: id,
                report: .progress(bytes: event.bytesPresent ?? 0, total: event.bytesTotal))
        case .finished: finishSelfHosted(key, id: id, size: event.bytesTotal ?? 0)
        case .failed(let failure): selfHostedEnded(id, .failed(failure))
        case .removed, .obsolete:
            selfHostedEnded(id, .failed(PackFailure("the pack was removed while it was being installed")))
        case .began, .paused: break
        }
    }

    private func finishSelfHosted(_ key: Key, id: String, size: Int64) {
        guard let app = logged("asset pack \(key)", { try store.app(key.app) }) ?? nil,
            let group = app.appGroupIdentifier
        else {
            selfHostedEnded(id, .failed(PackFailure("\(key.app) is no longer registered with basd")))
            return
        }
        selfHostedEnded(
            id, .finished(path: containers.packPath(group: group, app: key.app, id: key.pack), size: size))
    }
}
