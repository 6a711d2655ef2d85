// The Swift sample extension: the catalog scenario of Apple's Background Assets talks (WWDC22, WWDC23).
//
// - On install and update it returns the assets of the app's manifest, the essential ones (the
//   catalog and the first level) marked essential; on periodic checks none are essential.
// - When a download finishes while the app is not running, it moves the file into the app group
//   container, as `Assets/<identifier>`, under exclusive control (the app may be reading the folder).
//   The catalog is read there and every asset it lists that the app does not have yet is scheduled.
// - When an essential download fails, it is re-queued as a non-essential one, so the app still gets
//   it in the background.
//
// Plugins/SampleCExtension does the same through the C ABI, with the same log lines; for the same
// manifest both return the same downloads. Examples/SampleApp/README.md describes the asset set.
//
// Written as for Apple's framework: one import (it brings Foundation, and FoundationNetworking on
// Linux) and `@main` on the extension type, which is how the system finds it in the library.
import BackgroundAssets

/// The manifest format of Examples/Manifests/sample-manifest.json and
/// Examples/SampleApp/manifest.template.json.
struct Manifest: Decodable {
    struct Asset: Decodable {
        var identifier: String?
        var url: String?
        var fileSize: Int?
        var essential: Bool?
        var priority: Int?
        var sha256: String?
    }
    var applicationGroupIdentifier: String?
    var assets: [Asset]
}

/// The catalog format of Examples/SampleApp/assets/catalog.json: its assets are the manifest's
/// kind of entry, and a relative `url` is relative to where the catalog was downloaded from.
struct Catalog: Decodable {
    var title: String?
    var assets: [Manifest.Asset]
}

@main
struct SampleSwiftExtension: BADownloaderExtension {
    static let name = "SampleSwiftExtension"
    /// The identifier of the catalog download.
    static let catalogIdentifier = "catalog"

    func downloads(
        for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo
    ) -> Set<
        BADownload
    > {
        let manifest: Manifest
        do {
            manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: manifestURL))
        } catch {
            BAHostLog("\(Self.name): cannot read the manifest \(manifestURL.path): \(error)", level: .error)
            return []
        }
        var downloads = Set<BADownload>()
        for (index, asset) in manifest.assets.enumerated() {
            guard let identifier = asset.identifier, let string = asset.url, let url = URL(string: string) else {
                BAHostLog("\(Self.name): asset \(index) has no identifier or url; skipped", level: .error)
                continue
            }
            let download = BAURLDownload(
                identifier: identifier, request: URLRequest(url: url),
                essential: asset.essential == true && (request == .install || request == .update),
                fileSize: asset.fileSize ?? 0,
                applicationGroupIdentifier: manifest.applicationGroupIdentifier ?? "",
                priority: BADownload.Priority(asset.priority ?? BADownload.Priority.default.rawValue))
            downloads.insert(asset.sha256.map { download.baVerifyingSHA256($0) } ?? download)
        }
        let left = extensionInfo.restrictedDownloadSizeRemaining.map(String.init) ?? "unrestricted"
        let essentialLeft = extensionInfo.restrictedEssentialDownloadSizeRemaining.map(String.init) ?? "unrestricted"
        BAHostLog(
            "\(Self.name): returned \(downloads.count) downloads for request \(request.rawValue) "
                + "(allowance left: \(left), essential: \(essentialLeft))")
        return downloads
    }

    func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL) {
        BAHostLog("\(Self.name): finished \(finishedDownload.identifier) at \(fileURL.path)")
        let group = finishedDownload.applicationGroupIdentifier
        guard let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: group) else {
            BAHostLog(
                "\(Self.name): no app group container for \"\(group)\"; \(finishedDownload.identifier) is not kept",
                level: .error)
            return
        }
        let assetsFolder = container.appendingPathComponent("Assets", isDirectory: true)
        let destination = assetsFolder.appendingPathComponent(finishedDownload.identifier)

        // The app reads Assets/ too: change it only while holding exclusive control.
        BADownloadManager.shared.withExclusiveControl { acquired, error in
            guard acquired else {
                BAHostLog(
                    "\(Self.name): exclusive control not acquired: \(error?.localizedDescription ?? "unknown error")",
                    level: .error)
                return
            }
            do {
                let fileManager = FileManager.default
                try fileManager.createDirectory(at: assetsFolder, withIntermediateDirectories: true)
                // rename(2), as the C sample does: it replaces an older version atomically, and if
                // the file is already gone (the app, running, took it first) Assets/ keeps what it
                // has. Removing the old one first lost both then.
                guard rename(fileURL.path, destination.path) == 0 else {
                    throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                }
            } catch {
                BAHostLog(
                    "\(Self.name): cannot move \(finishedDownload.identifier) to \(destination.path): \(error)",
                    level: .error)
                return
            }
            BAHostLog("\(Self.name): moved \(finishedDownload.identifier) to \(destination.path)")

            if finishedDownload.identifier == Self.catalogIdentifier {
                // Still under exclusive control: the app never sees a catalog whose assets are not
                // scheduled yet.
                scheduleAssets(
                    ofCatalogAt: destination, downloadedFrom: (finishedDownload as? BAURLDownload)?.request.url,
                    applicationGroupIdentifier: group, assetsFolder: assetsFolder)
            }
        }
    }

    /// Schedules every asset of the catalog that is neither in `assetsFolder` nor already
    /// scheduled, as a non-essential download.
    func scheduleAssets(
        ofCatalogAt catalogURL: URL, downloadedFrom baseURL: URL?, applicationGroupIdentifier group: String,
        assetsFolder: URL
    ) {
        let catalog: Catalog
        do {
            catalog = try JSONDecoder().decode(Catalog.self, from: Data(contentsOf: catalogURL))
        } catch {
            BAHostLog("\(Self.name): cannot read the catalog \(catalogURL.path): \(error)", level: .error)
            return
        }
        let current = (try? BADownloadManager.shared.fetchCurrentDownloads()) ?? []
        let scheduledAlready = Set(current.map(\.identifier))
        var scheduled = 0
        for (index, asset) in catalog.assets.enumerated() {
            guard let identifier = asset.identifier, let string = asset.url,
                let url = URL(string: string, relativeTo: baseURL)?.absoluteURL
            else {
                BAHostLog("\(Self.name): catalog asset \(index) has no identifier or url; skipped", level: .error)
                continue
            }
            let file = assetsFolder.appendingPathComponent(identifier)
            if FileManager.default.fileExists(atPath: file.path) || scheduledAlready.contains(identifier) {
                continue
            }
            var download = BAURLDownload(
                identifier: identifier, request: URLRequest(url: url), essential: false,
                fileSize: asset.fileSize ?? 0, applicationGroupIdentifier: group,
                priority: BADownload.Priority(asset.priority ?? BADownload.Priority.default.rawValue))
            if let sha256 = asset.sha256 { download = download.baVerifyingSHA256(sha256) }
            do {
                try BADownloadManager.shared.scheduleDownload(download)
                scheduled += 1
            } catch {
                BAHostLog(
                    "\(Self.name): cannot schedule \(identifier): \(error.localizedDescription) "
                        + "(code \((error as NSError).code))", level: .error)
            }
        }
        BAHostLog("\(Self.name): scheduled \(scheduled) assets from the catalog")
    }

    func backgroundDownload(_ failedDownload: BADownload, failedWithError error: any Error) {
        BAHostLog(
            "\(Self.name): failed \(failedDownload.identifier): \(error.localizedDescription) "
                + "(code \((error as NSError).code))")
        // As in the WWDC23 session: the app cannot launch without an essential asset, so one that
        // failed is tried again in the background, where it is no longer essential.
        guard failedDownload.isEssential else { return }
        do {
            try BADownloadManager.shared.scheduleDownload(failedDownload.removingEssential())
            BAHostLog("\(Self.name): re-queued \(failedDownload.identifier) as a non-essential download")
        } catch {
            BAHostLog(
                "\(Self.name): cannot re-queue \(failedDownload.identifier): \(error.localizedDescription) "
                    + "(code \((error as NSError).code))", level: .error)
        }
    }

    func backgroundDownload(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge
    ) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    {
        let environment = ProcessInfo.processInfo.environment
        guard let user = environment["BA_SAMPLE_USER"], let password = environment["BA_SAMPLE_PASSWORD"] else {
            return (.performDefaultHandling, nil)
        }
        return (.useCredential, URLCredential(user: user, password: password, persistence: .forSession))
    }

    func extensionWillTerminate() {
        BAHostLog("\(Self.name): terminating")
    }
}
