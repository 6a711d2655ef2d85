// The Swift sample extension: reads the app's JSON manifest and returns its assets, essential
// ones only for install and update. Plugins/SampleCExtension does the same through the C ABI;
// for the same manifest both return the same downloads.
import BackgroundAssets
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The manifest format of Examples/Manifests/sample-manifest.json.
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

struct SampleSwiftExtension: BADownloaderExtension {
    func downloads(for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo) -> Set<
        BADownload
    > {
        let manifest: Manifest
        do {
            manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: manifestURL))
        } catch {
            BAHostLog("SampleSwiftExtension: cannot read the manifest \(manifestURL.path): \(error)", level: .error)
            return []
        }
        var downloads = Set<BADownload>()
        for (index, asset) in manifest.assets.enumerated() {
            guard let identifier = asset.identifier, let string = asset.url, let url = URL(string: string) else {
                BAHostLog("SampleSwiftExtension: asset \(index) has no identifier or url; skipped", level: .error)
                continue
            }
            let download = BAURLDownload(
                identifier: identifier, request: URLRequest(url: url),
                essential: asset.essential == true && request != .periodic, fileSize: asset.fileSize ?? 0,
                applicationGroupIdentifier: manifest.applicationGroupIdentifier ?? "",
                priority: BADownload.Priority(asset.priority ?? BADownload.Priority.default.rawValue))
            downloads.insert(asset.sha256.map { download.baVerifyingSHA256($0) } ?? download)
        }
        let left = extensionInfo.restrictedDownloadSizeRemaining.map(String.init) ?? "unrestricted"
        let essentialLeft = extensionInfo.restrictedEssentialDownloadSizeRemaining.map(String.init) ?? "unrestricted"
        BAHostLog(
            "SampleSwiftExtension: returned \(downloads.count) downloads for request \(request.rawValue) "
                + "(allowance left: \(left), essential: \(essentialLeft))")
        return downloads
    }

    func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL) {
        BAHostLog("SampleSwiftExtension: finished \(finishedDownload.identifier) at \(fileURL.path)")
        BADownloadManager.shared.withExclusiveControl(beforeDate: Date(timeIntervalSinceNow: 5)) { acquired, error in
            guard acquired, let inbox = ProcessInfo.processInfo.environment["BA_SAMPLE_INBOX"] else { return }
            let line = "\(finishedDownload.identifier)\t\(fileURL.path)\n"
            let logURL = URL(fileURLWithPath: inbox).appendingPathComponent("finished.log")
            if let handle = try? FileHandle(forWritingTo: logURL) {
                handle.seekToEndOfFile()
                handle.write(Data(line.utf8))
                try? handle.close()
            } else {
                try? Data(line.utf8).write(to: logURL)
            }
        }
    }

    func backgroundDownload(_ failedDownload: BADownload, failedWithError error: any Error) {
        BAHostLog(
            "SampleSwiftExtension: failed \(failedDownload.identifier): \(error.localizedDescription) (code \((error as NSError).code))"
        )
    }

    func backgroundDownload(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    {
        let environment = ProcessInfo.processInfo.environment
        guard let user = environment["BA_SAMPLE_USER"], let password = environment["BA_SAMPLE_PASSWORD"] else {
            return (.performDefaultHandling, nil)
        }
        return (.useCredential, URLCredential(user: user, password: password, persistence: .forSession))
    }

    func extensionWillTerminate() {
        BAHostLog("SampleSwiftExtension: terminating")
    }
}

@_cdecl("ba_extension_descriptor")
public func baExtensionDescriptor() -> UnsafeRawPointer {
    BAExportExtension(SampleSwiftExtension.self, version: "1.0.0")
}
