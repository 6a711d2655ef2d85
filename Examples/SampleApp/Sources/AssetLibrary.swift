import BackgroundAssets
import Synchronization

/// The app's assets: `Assets/IDENTIFIER` in the app group container, shared with the extension,
/// which puts there what finishes while the app is not running.
final class AssetLibrary: BADownloadManagerDelegate, Sendable {
    let bundle: AppBundle
    let assetsFolder: URL

    private struct State {
        /// Downloads basd is working on for us, by identifier.
        var inFlight: Set<String> = []
        /// Downloads that failed once: asked for again if still missing.
        var failedOnce: Set<String> = []
        /// Downloads that failed twice: the app gives up on them.
        var givenUp: [String: String] = [:]
        /// Whoever waits in ``nextChange()``, and a change nobody waited for yet.
        var waiter: CheckedContinuation<Bool, Never>?
        var unseenChange = false
        /// Set once by the deadline's timer: from then on every wait ends at once.
        var deadlinePassed = false
    }
    private let state = Mutex(State())

    init(bundle: AppBundle, assetsFolder: URL) {
        self.bundle = bundle
        self.assetsFolder = assetsFolder
    }

    /// Brings every asset of the catalog into `Assets/`, the user waiting: promotes what is being
    /// downloaded, downloads again what is missing. Returns whether everything is there.
    func makeEverythingAvailable(deadline: Date) async -> Bool {
        BADownloadManager.shared.delegate = self
        // One timer for the whole wait. It records that the deadline passed under the lock a wait
        // registers under, so a deadline that passes while no one waits is not lost (the next
        // wait ends at once instead of never).
        let timer = Task {
            try? await Task.sleep(for: .seconds(max(0, deadline.timeIntervalSinceNow)))
            if !Task.isCancelled { self.deadlinePassed() }
        }
        defer { timer.cancel() }

        // What the system is downloading for us already: the user is waiting, so ask for it now.
        do {
            let current = try await BADownloadManager.shared.currentDownloads
            for download in current where download.state != .finished && download.state != .failed {
                state.withLock { _ = $0.inFlight.insert(download.identifier) }
                do {
                    try BADownloadManager.shared.startForegroundDownload(download)
                    say("promoted \(download.identifier) to the foreground (it was \(Self.describe(download.state)))")
                } catch {
                    say("could not promote \(download.identifier): \(error.localizedDescription)")
                }
            }
        } catch {
            say("cannot list the current downloads: \(error.localizedDescription)")
            return false
        }

        while true {
            let wanted = await wantedAssets()
            let missing = wanted.filter { !isAvailable($0.identifier) }
            let inFlight = state.withLock { $0.inFlight }
            if missing.isEmpty && inFlight.isEmpty {
                say("all \(wanted.count) catalog assets are in \(assetsFolder.path), and nothing is downloading")
                return true
            }
            for asset in missing { fetchIfNeeded(asset) }
            if let failure = state.withLock({ $0.givenUp.first }) {
                say("giving up: \(failure.key) failed twice (\(failure.value))")
                return false
            }
            guard await nextChange() else {
                let waiting = Set(missing.map(\.identifier)).union(inFlight).sorted()
                say("still waiting for \(waiting.joined(separator: ", ")) at the deadline")
                return false
            }
        }
    }

    // MARK: - BADownloadManagerDelegate

    func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {
        // The file is the app's only during this callback. Move it under exclusive control, so the
        // extension never sees a half-moved file (or moves one at the same time).
        // The handler runs on a thread of its own; the file stays until it has returned.
        BADownloadManager.shared.withExclusiveControl { acquired, error in
            defer {
                self.state.withLock { _ = $0.inFlight.remove(download.identifier) }
                self.changed()
            }
            guard acquired else {
                say("no exclusive control for \(download.identifier): \(error?.localizedDescription ?? "?")")
                return
            }
            do {
                try self.moveIntoPlace(fileURL, identifier: download.identifier)
                say("finished \(download.identifier): moved to Assets/\(download.identifier)")
            } catch {
                say("cannot keep \(download.identifier): \(error.localizedDescription)")
            }
        }
    }

    func download(_ download: BADownload, failedWithError error: any Error) {
        say("\(download.identifier) failed: \(error.localizedDescription)")
        state.withLock { state in
            state.inFlight.remove(download.identifier)
            if !state.failedOnce.insert(download.identifier).inserted {
                state.givenUp[download.identifier] = error.localizedDescription
            }
        }
        changed()
    }

    // MARK: - Assets

    /// The catalog and everything it lists. Read under exclusive control: the extension may be
    /// replacing it.
    private func wantedAssets() async -> [Catalog.Asset] {
        let catalogEntry = Catalog.Asset(identifier: Catalog.identifier, url: Catalog.path)
        let file = assetsFolder.appendingPathComponent(Catalog.identifier)
        let catalog = try? await BADownloadManager.shared.withExclusiveControl {
            try JSONDecoder().decode(Catalog.self, from: Data(contentsOf: file))
        }
        return [catalogEntry] + (catalog?.assets ?? [])
    }

    private func isAvailable(_ identifier: String) -> Bool {
        FileManager.default.fileExists(atPath: assetsFolder.appendingPathComponent(identifier).path)
    }

    /// Downloads `asset` in the foreground unless basd is already on it; a second failure gives up.
    private func fetchIfNeeded(_ asset: Catalog.Asset) {
        let again = state.withLock { state -> Bool? in
            guard !state.inFlight.contains(asset.identifier), state.givenUp[asset.identifier] == nil else { return nil }
            state.inFlight.insert(asset.identifier)
            return state.failedOnce.contains(asset.identifier)
        }
        guard let again, let url = URL(string: asset.url, relativeTo: bundle.contentBaseURL)?.absoluteURL else {
            return
        }
        var download = BAURLDownload(
            identifier: asset.identifier, request: URLRequest(url: url), essential: false,
            fileSize: asset.fileSize ?? 0,
            applicationGroupIdentifier: bundle.appGroupIdentifier,
            priority: BADownload.Priority(asset.priority ?? BADownload.Priority.default.rawValue))
        if let sha256 = asset.sha256 { download = download.baVerifyingSHA256(sha256) }
        do {
            try BADownloadManager.shared.scheduleDownload(download)
        } catch {
            say("cannot download \(asset.identifier): \(error.localizedDescription)")
            state.withLock { state in
                state.inFlight.remove(asset.identifier)
                state.givenUp[asset.identifier] = error.localizedDescription
            }
            return
        }
        say("\(again ? "downloading again" : "downloading") \(asset.identifier) in the foreground")
        do {
            try BADownloadManager.shared.startForegroundDownload(download)
        } catch {
            // Scheduled, so the delegate hears how it ends: it may have ended already (a server
            // that answers 404 at once), or it goes on in the background.
            say("could not promote \(asset.identifier): \(error.localizedDescription)")
        }
    }

    private func moveIntoPlace(_ file: URL, identifier: String) throws {
        let manager = FileManager.default
        try manager.createDirectory(at: assetsFolder, withIntermediateDirectories: true)
        let destination = assetsFolder.appendingPathComponent(identifier)
        if manager.fileExists(atPath: destination.path) {
            _ = try manager.replaceItemAt(destination, withItemAt: file)
        } else {
            try manager.moveItem(at: file, to: destination)
        }
    }

    // MARK: - Waiting

    /// Waits for a delegate callback; false once the deadline has passed.
    private func nextChange() async -> Bool {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool? in
                if state.deadlinePassed { return false }
                if state.unseenChange {
                    state.unseenChange = false
                    return true
                }
                state.waiter = continuation
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    private func changed() {
        let waiter = state.withLock { state in
            let waiter = state.waiter
            state.waiter = nil
            if waiter == nil { state.unseenChange = true }
            return waiter
        }
        waiter?.resume(returning: true)
    }

    private func deadlinePassed() {
        let waiter = state.withLock { state in
            state.deadlinePassed = true
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: false)
    }

    static func describe(_ state: BADownload.State) -> String {
        switch state {
        case .created: return "waiting to start"
        case .waiting: return "queued in the background"
        case .downloading: return "downloading in the background"
        case .finished: return "finished"
        case .failed: return "failed"
        }
    }
}
