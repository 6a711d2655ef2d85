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
        manifestFetches[id] = { [self] event in
            switch event {
            case .finished(_, let path, let size, _, _):
                manifestFetches[id] = nil
                chmod(path, 0o444)
                done(.success(FetchedManifest(path: path, size: size)))
            case .failed(_, let error):
                manifestFetches[id] = nil
                unlink(destination)
                unlink(destination + ".partial")
                unlink(destination + ".partial.validator")
                let code = DownloadFailure.stored(error)
                done(.failure(ManifestFailure("\(code.message) (\(code.domain) \(code.code))")))
            case .needsCredentials:
                engine.respond(to: id, with: .cancel)
            default:
                break
            }
        }
        engine.add(
            DownloadRequest(
                id: id, url: url, destination: destination, partialPath: destination + ".partial", byteLimit: remaining,
                priority: 1000, isEssential: true, isForeground: true, allowList: allowList.map(HostAllowList.init),
                trust: trust))
    }

    struct ManifestFailure: Error, Sendable {
        var message: String
        init(_ message: String) { self.message = message }
    }
}
