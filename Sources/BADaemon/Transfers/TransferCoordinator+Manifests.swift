import BADownloadEngine
import BAStore
import Foundation

// Manifests, fetched through the engine for one content-request call each (executor).
extension TransferCoordinator {
    /// A fetched manifest: a read-only file in basd's state directory.
    struct FetchedManifest: Sendable {
        var path: String
        var size: Int64
    }

    /// Where fetched manifests live while their call runs.
    var manifestsDirectory: String { configuration.stateDirectory + "/manifests" }

    /// Deletes what a basd that died mid-call left in the manifests folder (manifests and their
    /// partial files): a manifest belongs to one call, and no call survives a restart. Call at
    /// start, before serving.
    func removeLeftoverManifests() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: manifestsDirectory) else { return }
        for name in names {
            let path = manifestsDirectory + "/" + name
            // The engine's `.ba-partial` folder is a directory (removed whole: partial manifests
            // cannot be resumed by a call that no longer exists).
            do {
                try FileManager.default.removeItem(atPath: path)
                if name != ".ba-partial" { log("removed \(path), left by a call that did not end") }
            } catch {
                log("cannot remove \(path), left by a call that did not end: \(error.localizedDescription)")
            }
        }
    }

    /// Fetches `url` through the engine (at once, ahead of the queue) into a read-only file;
    /// before the app's first launch the fetch keeps to the allowance and the allow-list.
    func fetchManifest(
        _ url: String, for app: StoredApp, done: @escaping @Sendable (Result<FetchedManifest, ManifestFailure>) -> Void
    ) {
        let directory = manifestsDirectory
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            done(.failure(ManifestFailure("cannot create \(directory): \(error.localizedDescription)")))
            return
        }
        let id = "manifest:" + UUID().uuidString
        let destination = directory + "/" + app.bundleIdentifier + "-" + id.dropFirst("manifest:".count) + ".manifest"
        let remaining = remainingAllowances(of: app).nonEssential
        if let remaining, remaining <= 0 {
            done(
                .failure(
                    ManifestFailure(
                        "BADownloadAllowance is used up before the app's first launch (error 203)")))
            return
        }
        // The engine checks the URL (and the allow-list) before it connects, and every redirect hop.
        let allowList = app.launched ? nil : app.restrictions.domainAllowList
        let request = DownloadRequest(
            id: id, url: url, destination: destination, partialPath: destination + ".partial", byteLimit: remaining,
            priority: 1000, isEssential: true, isForeground: true, allowList: allowList.map(HostAllowList.init),
            trust: trust)
        addSideFetch(request) { result in
            switch result {
            case .success(let (path, size)):
                chmod(path, 0o444)
                done(.success(FetchedManifest(path: path, size: size)))
            case .failure(let error):
                unlink(destination)
                let code = DownloadFailure.stored(error)
                done(.failure(ManifestFailure("\(code.message) (\(code.domain) \(code.code))")))
            }
        }
    }

    /// Hands `request` (engine id `manifest:…` or `pack:…`) to the engine as a side fetch, not a
    /// stored download: its end goes to `done`, once, on the executor (a failure's partial file
    /// and validator removed first); a credential challenge is declined.
    func addSideFetch(
        _ request: DownloadRequest, progress: ((Int64) -> Void)? = nil,
        done: @escaping (Result<(path: String, size: Int64), DownloadError>) -> Void
    ) {
        let id = request.id
        let partial = request.partialPath
        if !request.isEssential && !request.isForeground { backgroundSideFetches[id] = .queued }
        sideFetches[id] = { [self] event in
            switch event {
            case .finished(_, let path, let size, _, _):
                sideFetches[id] = nil
                done(.success((path, size)))
            case .failed(_, let error):
                sideFetches[id] = nil
                unlink(partial)
                unlink(partial + ".validator")
                done(.failure(error))
            case .needsCredentials:
                engine.respond(to: id, with: .cancel)
            case .progress(_, let bytes, _):
                progress?(bytes)
            default:
                break
            }
        }
        engine.add(request)
    }

    struct ManifestFailure: Error, Sendable {
        var message: String
        init(_ message: String) { self.message = message }
    }
}

// Asset-pack files (manifests, signatures, indexes, chunks), fetched through the engine (executor).
extension TransferCoordinator {
    /// A file the pack service asks for.
    struct PackFetch: Sendable {
        /// Unique among fetches in flight; the engine id is `pack:` + this.
        var id: String
        var url: String
        var destination: String
        /// The exact size, when the index gives it.
        var expectedSize: Int64?
        /// The most bytes accepted (a manifest or an index is small).
        var byteLimit: Int64?
        /// Essential fetches (manifests, indexes, an essential or requested pack's chunks) start
        /// at once; the others queue with background downloads (the background concurrency) and
        /// hold in Low Power Mode like them. Neither fails fast.
        var essential: Bool
        /// Where the body goes instead of a file, for bytes the signed index fixes (an asset
        /// pack's unit): resumed with `Range` and no validator (``DownloadSink``). Needs
        /// `expectedSize`; `done` then gets `destination`, where nothing was written.
        var sink: (any DownloadSink)? = nil
        /// False: the engine parks it while the network is metered (``PackConsent``).
        var allowsMetered = true
    }

    /// Fetches one file for the pack service: the URL rules, `allowedHosts`, TLS settings, proxies
    /// and retries are any download's; before the app's first launch its allow-list applies.
    /// Finished files are not fsynced (the pack service checks and copies them at once). `done`
    /// runs on the executor with the file's path, or what failed.
    func fetchPackFile(
        _ fetch: PackFetch, for app: StoredApp, done: @escaping (Result<String, PackFetchFailure>) -> Void
    ) {
        fetchPackFile(fetch, for: app, progress: { _ in }, done: done)
    }

    /// Like ``fetchPackFile(_:for:done:)``; `progress` hears the bytes of the file so far (the
    /// engine's progress: at most every 100 ms), on the executor.
    func fetchPackFile(
        _ fetch: PackFetch, for app: StoredApp, progress: @escaping (Int64) -> Void,
        done: @escaping (Result<String, PackFetchFailure>) -> Void
    ) {
        var request = DownloadRequest(
            id: "pack:" + fetch.id, url: fetch.url, destination: fetch.destination, expectedSize: fetch.expectedSize,
            byteLimit: fetch.byteLimit, priority: fetch.essential ? 900 : 100, isEssential: fetch.essential,
            allowList: app.launched ? nil : app.restrictions.domainAllowList.map(HostAllowList.init), trust: trust)
        request.durable = false
        request.sink = fetch.sink
        request.allowsMeteredNetwork = fetch.allowsMetered
        addSideFetch(request, progress: progress) { result in
            switch result {
            case .success(let (path, _)):
                done(.success(path))
            case .failure(let error):
                let code = DownloadFailure.stored(error)
                done(
                    .failure(
                        PackFetchFailure(
                            message: "\(code.message) (\(code.domain) \(code.code))", noSpace: error.code == .noSpace,
                            httpStatus: error.httpStatus)))
            }
        }
    }

    /// Stops a pack fetch (its partial file is removed); its `done` is never called.
    func cancelPackFetch(_ id: String) {
        backgroundSideFetches["pack:" + id] = nil
        guard sideFetches.removeValue(forKey: "pack:" + id) != nil else { return }
        engine.cancel("pack:" + id)
    }

    /// Whether every one of `ids` (pack fetches in flight, as ``PackFetch/id``) waits for the
    /// engine's background concurrency: none started, none waiting to retry. False for none.
    func fetchesWaitInQueue(_ ids: some Collection<String>) -> Bool {
        !ids.isEmpty && ids.allSatisfy { backgroundSideFetches["pack:" + $0] == .queued }
    }

    /// Where a background side fetch stands in the engine.
    enum SideFetchState: Equatable, Sendable {
        /// Not started (or paused): waiting for a background slot.
        case queued
        case running
        case waitingToRetry
    }

    /// Follows a side fetch's engine event (before its caller hears it).
    func noteSideFetch(_ event: EngineEvent) {
        guard backgroundSideFetches[event.id] != nil else { return }
        switch event {
        case .began: backgroundSideFetches[event.id] = .running
        case .paused: backgroundSideFetches[event.id] = .queued
        case .retrying: backgroundSideFetches[event.id] = .waitingToRetry
        case .finished, .failed: backgroundSideFetches[event.id] = nil
        case .progress, .validator, .needsCredentials, .serverWaiting, .serverAnswered: break
        }
    }

    /// Why a pack file could not be fetched.
    struct PackFetchFailure: Error, Sendable {
        var message: String
        /// The disk is full: the fetch should wait for space, not fail the pack.
        var noSpace: Bool
        /// The server's status, when it answered with an error (404: the publish folder lacks the file).
        var httpStatus: Int?
    }
}
