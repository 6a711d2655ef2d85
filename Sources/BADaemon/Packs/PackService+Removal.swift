import BADaemonProtocol
import BAPacks
import BAStore
import Foundation

// Removing packs (`ba packs remove`, obsolete packs, `ba uninstall`) and the links an app reads
// them through (issue 33: one namespace per app; a removal that never races a job's switch).
extension PackService {
    /// `ba packs remove`: the pack's files go (once nothing holds them); it stays listed.
    func remove(app name: String, pack: String) -> ServerMessage.Result {
        let key = Key(app: name, pack: pack)
        let found: PackRow?
        do { found = try self.row(key) } catch {
            return Refusal(.internalError, "basd could not read its asset packs: \(error)").result
        }
        guard let row = found else {
            return Refusal(.invalidRequest, "\(name) has no asset pack \"\(pack)\"").result
        }
        stopJob(key)
        removePack(key, row: row, forget: row.entry == nil)
        send(PackEvent(.removed, appIdentifier: name, assetPackID: pack, version: row.localVersion))
        return .packs(PackReport(packs: listing(app: name).filter { $0.assetPackID == pack }))
    }

    /// Removes a pack's link, every version and staging folder of it; keeps or forgets its row.
    /// Call after ``stopJob(_:)``.
    ///
    /// Whatever phase the job was in, the pack stays absent: the job's gate is closed (its switch
    /// happened already or never will: ``PackSwitchGate``), so the link removed here, before the
    /// row says "not local", is the last one; and the files go on the pack's queue
    /// (``packQueue(_:)``), after a step the job had under way: a version it completed but did
    /// not switch to, a staging folder it was writing. A restart finds no link, so the pack stays
    /// absent then too, and ``cleanUpAtStart(rows:)`` removes what a kill cut short.
    func removePack(_ key: Key, row: PackRow, forget: Bool) {
        let root = containers.packRoot(app: key.app)
        do throws(PackError) {
            try PackInstallation.removeLink(root: root, id: key.pack)
        } catch {
            log("asset pack \(key): \(error)")
        }
        var row = row
        row.localVersion = nil
        row.target = nil
        row.requested = false
        do {
            if forget { try store.deletePack(app: key.app, pack: key.pack) } else { try store.savePack(row.stored) }
        } catch {
            log("asset pack \(key): \(error)")
        }
        packQueue(key).async { [self] in
            // Versions are moved aside at once (`N.replaced`), so that asking for the pack again
            // can assemble the same version anew; they go once nothing holds them.
            let retired: Result<[Int], PackError>
            do throws(PackError) {
                retired = .success(try PackInstallation.retireAllButCurrent(root: root, id: key.pack))
            } catch {
                retired = .failure(error)
            }
            executor.async { [self] in
                switch retired {
                case .success(let versions):
                    for version in versions { removeWhenFree(key, version: version, replaced: true) }
                case .failure(let error):
                    log("asset pack \(key): cannot remove its files: \(error)")
                }
            }
        }
    }

    /// Removes everything of `app`'s packs: jobs, links, files, rows (`ba uninstall`). The other
    /// apps of its group keep theirs, and `CONTAINER/AssetPacks` leads to one of them, or goes.
    func uninstall(_ app: String) {
        // Unreadable (logged): the group's links are not re-pointed.
        let group = logged("packs of \(app): its app group") { try store.app(app) }??.appGroupIdentifier
        for key in jobs.keys where key.app == app { stopJob(key) }
        selfHosted = selfHosted.filter { $0.key.app != app }
        heldVersions = heldVersions.filter { $0.key.app != app }
        do { try store.removePackApp(app) } catch { log("packs of \(app): \(error)") }
        if let group, let failure = linkNamespace(group: group, excluding: app) {
            log("asset packs of \(app): \(failure)")
        }
        let root = containers.packRoot(app: app)
        // After every step the app's jobs had under way on their queues.
        let drained = DispatchGroup()
        for (key, queue) in packQueues where key.app == app { queue.async(group: drained) {} }
        drained.notify(queue: io) { [log] in
            if let problem = Self.removeAll(root: root) {
                log("cannot remove the asset packs of \(app) at \(root): \(problem)")
            }
        }
    }

    /// Makes `group`'s pack links match the apps of the group that get packs (less `excluding`,
    /// an app being uninstalled): ``AppContainers/linkPacks(group:apps:)``. Nil, or why not, with
    /// what to move when a folder of the app's is in the way.
    ///
    /// The apps that get packs are those with a download manifest (`pack_app`), those with packs
    /// of a self-hosted manifest (rows of their own), and `including` (one about to have some).
    func linkNamespace(group: String, excluding: String? = nil, including: String? = nil) -> String? {
        let apps: [String]
        do {
            var withPacks = Set(try store.packApps().map(\.appIdentifier))
            withPacks.formUnion(try store.appsWithPackRows())
            if let including { withPacks.insert(including) }
            apps = try store.apps().filter { app in
                app.appGroupIdentifier == group && app.bundleIdentifier != excluding
                    && withPacks.contains(app.bundleIdentifier)
            }
            .map(\.bundleIdentifier)
        } catch {
            return "basd could not read the apps of the app group \(group): \(error)"
        }
        do {
            if !apps.isEmpty { try containers.prepare(group: group) }
            try containers.linkPacks(group: group, apps: apps)
        } catch {
            return "\(error)"
        }
        return nil
    }

    /// Removes every version (read-only folders), staging folder and link under an app's pack
    /// root, then the root; nil, or what could not be removed.
    static func removeAll(root: String) -> String? {
        let packs = root + "/.background-assets/packs"
        for id in (try? FileManager.default.contentsOfDirectory(atPath: packs)) ?? [] {
            do throws(PackError) {
                try PackInstallation.removeLink(root: root, id: id)
                for version in try PackInstallation.versions(root: root, id: id) {
                    try PackInstallation.remove(root: root, id: id, version: version)
                }
                let leftovers = try PackInstallation.leftovers(root: root, id: id)
                for version in leftovers.replaced {
                    try PackInstallation.removeReplaced(root: root, id: id, version: version)
                }
                for version in leftovers.staging {
                    try PackInstallation.removeStaging(root: root, id: id, version: version)
                }
            } catch {
                return "\(error)"
            }
        }
        do {
            if FileManager.default.fileExists(atPath: root) { try FileManager.default.removeItem(atPath: root) }
        } catch {
            return error.localizedDescription
        }
        return nil
    }

    /// Removes a version that is no longer current (or, `replaced`, the damaged copy a repair
    /// swapped out) once no process holds a file in it.
    func removeWhenFree(_ key: Key, version: Int, replaced: Bool = false) {
        let root = containers.packRoot(app: key.app)
        io.async { [self] in
            let directory =
                root + "/" + PackInstallation.packsFolder(id: key.pack) + "/\(version)" + (replaced ? ".replaced" : "")
            guard FileManager.default.fileExists(atPath: directory) else { return }
            // That version may be current again (assembled anew since): it stays. When the link
            // cannot be read, it stays too (fail closed: what is current is not known).
            if !replaced {
                do throws(PackError) {
                    if try PackInstallation.current(root: root, id: key.pack) == version { return }
                } catch {
                    log(
                        "asset pack \(key): version \(version) stays: which version is current cannot be read (\(error))"
                    )
                    return
                }
            }
            let holders = PackInstallation.holders(of: directory)
            if holders.isEmpty {
                do throws(PackError) {
                    if replaced {
                        try PackInstallation.removeReplaced(root: root, id: key.pack, version: version)
                    } else {
                        try PackInstallation.remove(root: root, id: key.pack, version: version)
                    }
                    log("asset pack \(key): removed \(replaced ? "the old copy of " : "")version \(version)")
                } catch {
                    log("asset pack \(key): cannot remove version \(version): \(error)")
                }
                return
            }
            executor.async { [self] in
                guard replaced || (try? PackInstallation.current(root: root, id: key.pack)) != version else { return }
                let held = HeldVersion(key: key, version: version, replaced: replaced)
                if heldVersions.insert(held).inserted {
                    log(
                        "asset pack \(key): version \(version) stays while process(es) \(holders.map(String.init).joined(separator: ", ")) hold it"
                    )
                }
                armHeldTimer()
            }
        }
    }

    private func armHeldTimer() {
        guard !heldTimerArmed, !heldVersions.isEmpty else { return }
        heldTimerArmed = true
        executor.after(retryInterval * 5) { [self] in
            heldTimerArmed = false
            let held = heldVersions
            heldVersions = []
            for version in held { removeWhenFree(version.key, version: version.version, replaced: version.replaced) }
        }
    }
}
