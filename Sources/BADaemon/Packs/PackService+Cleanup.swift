import BAPacks
import BAStore
import Foundation

// What nothing else removes (issue 33): staging folders no job will finish, damaged copies a
// repair swapped out, `.fetch/` files of fetches that ended or were cut short, and the packs of
// an app uninstalled while basd was stopped. Cleaned at start, and while running once nothing
// uses them.
extension PackService {
    /// The serial queue of pack `key`'s files: each of its jobs (staging, the switch) and its
    /// removal run on it one after the other, so a removal always comes after a step that was
    /// under way (and a new job's first step after the removal).
    func packQueue(_ key: Key) -> DispatchQueue {
        if let queue = packQueues[key] { return queue }
        let queue = DispatchQueue(label: "basd-pack-\(key.pack)", qos: .utility)
        packQueues[key] = queue
        return queue
    }

    /// Removes what a previous basd left that nothing would finish: everything under each app's
    /// `.fetch/`; each staging folder but the one of the version its row still targets; each
    /// `N.replaced` (once nothing holds it); the files of packs without a row; and the pack root
    /// of an app that no longer gets packs (an uninstall cut short). Call at start, before any
    /// job or check runs (``resume()``); `rows` are the store's packs.
    func cleanUpAtStart(rows: [PackRow]) {
        let apps: [StoredPackApp]
        do { apps = try store.packApps() } catch {
            // Without the list, nothing is known to be unused: nothing is removed.
            log("cannot read the apps with asset packs to clean up after them: \(error)")
            return
        }
        let known = Set(apps.map(\.appIdentifier)).union(rows.map(\.appIdentifier))
        let roots =
            logged("cannot list \(containers.packsDirectory) to clean up") {
                try FileManager.default.contentsOfDirectory(atPath: containers.packsDirectory)
            } ?? []
        for app in roots.sorted() where !app.hasPrefix(".") {
            let root = containers.packRoot(app: app)
            guard known.contains(app) else {
                log("asset packs of \(app): no longer installed; its pack files are removed")
                if let problem = Self.removeAll(root: root) { log("cannot remove \(root): \(problem)") }
                continue
            }
            removeFetchLeftovers(app: app)
            let ids: [String]
            do throws(PackError) { ids = try PackInstallation.packIDs(root: root) } catch {
                log("asset packs of \(app): \(error)")
                continue
            }
            let byID = Dictionary(
                rows.filter { $0.appIdentifier == app }.map { ($0.packID, $0) }, uniquingKeysWith: { first, _ in first }
            )
            for id in ids { cleanUp(Key(app: app, pack: id), row: byID[id], root: root) }
        }
    }

    /// One pack's leftovers at start (``cleanUpAtStart(rows:)``).
    private func cleanUp(_ key: Key, row: PackRow?, root: String) {
        guard let row else {
            // Its row went (forgotten, obsolete) but not its files: a removal cut short.
            log("asset pack \(key): no longer known; its files are removed")
            do throws(PackError) {
                try PackInstallation.removeLink(root: root, id: key.pack)
                for version in try PackInstallation.retireAllButCurrent(root: root, id: key.pack) {
                    removeWhenFree(key, version: version, replaced: true)
                }
            } catch {
                log("asset pack \(key): \(error)")
            }
            return
        }
        let target = row.target?.version
        let leftovers: PackInstallation.Leftovers
        do throws(PackError) { leftovers = try PackInstallation.leftovers(root: root, id: key.pack) } catch {
            log("asset pack \(key): \(error)")
            return
        }
        for version in leftovers.staging where version != target {
            do throws(PackError) {
                try PackInstallation.removeStaging(root: root, id: key.pack, version: version)
                log("asset pack \(key): removed the staging folder of version \(version), which nothing will finish")
            } catch {
                log("asset pack \(key): \(error)")
            }
        }
        for version in leftovers.replaced { removeWhenFree(key, version: version, replaced: true) }
    }

    /// Removes everything in `app`'s `.fetch/` folder (fetched files not yet taken, `.part`
    /// files of fetches cut short). Only when nothing of the app is fetched: at start, or from
    /// ``sweepFetchIfIdle(app:)``.
    private func removeFetchLeftovers(app: String) {
        let directory = fetchDirectory(app: app)
        var info = stat()
        // Never through a link (it is basd's own folder, but a link there is not basd's).
        guard lstat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            do { try FileManager.default.removeItem(atPath: directory + "/" + name) } catch {
                log("asset packs of \(app): cannot remove \(directory)/\(name): \(error)")
            }
        }
    }

    /// Empties `app`'s `.fetch/` once no job of the app runs and no manifest check is in flight
    /// (a job that failed, was stopped or removed may leave an index, a `.part` file or chunks).
    func sweepFetchIfIdle(app: String) {
        guard checks[app] == nil, !jobs.keys.contains(where: { $0.app == app }) else { return }
        removeFetchLeftovers(app: app)
    }

    /// After version `version` of pack `id` became current: the staging folders of other versions
    /// (a failed or replaced attempt) will never be finished, and go. On the pack's queue.
    static func removeOtherStaging(
        root: String, id: String, keeping version: Int, log: @Sendable (String) -> Void
    ) {
        do throws(PackError) {
            for stale in try PackInstallation.leftovers(root: root, id: id).staging where stale != version {
                try PackInstallation.removeStaging(root: root, id: id, version: stale)
                log("asset pack \(id): removed the staging folder of version \(stale), which nothing will finish")
            }
        } catch {
            log("asset pack \(id): \(error)")
        }
    }

    /// A test hook, in debug builds only: with `BASD_TEST_PACK_SWITCH_GATE=DIR` in the
    /// environment, the job's queue stops right before switching to `version`, creates
    /// `DIR/APP-PACK-VERSION.paused` and waits (up to 60 s) for `DIR/APP-PACK-VERSION.go`. A test
    /// uses it to make a removal land exactly between a version's completion and its switch.
    static func pauseBeforeSwitchForTests(_ key: Key, version: Int) {
        #if DEBUG
            guard let directory = ProcessInfo.processInfo.environment["BASD_TEST_PACK_SWITCH_GATE"] else { return }
            let name = directory + "/\(key.app)-\(key.pack)-\(version)"
            _ = FileManager.default.createFile(atPath: name + ".paused", contents: nil)
            for _ in 0..<6000 where !FileManager.default.fileExists(atPath: name + ".go") { usleep(10_000) }
        #endif
    }
}
