// App-side code written as Apple developers write it for Apple's framework: a non-final delegate
// class with mutable state, a protocol that wraps the manager with Apple's exact signatures (a
// common pattern for testing), and the closure and async exclusive-control forms. It must compile
// unchanged in Swift 5 and Swift 6 language modes with no warning (AppleCompatibilityTests).
import BackgroundAssets

/// Apple's `BADownloadManager` signatures, as an app declares them to substitute a fake in tests.
protocol DownloadManaging: AnyObject {
    var delegate: BADownloadManagerDelegate? { get set }
    func scheduleDownload(_ download: BADownload) throws
    func startForegroundDownload(_ download: BADownload) throws
    func cancel(_ download: BADownload) throws
    func fetchCurrentDownloads() throws -> [BADownload]
    func fetchCurrentDownloads(completionHandler: @escaping ([BADownload], Error?) -> Void)
    func withExclusiveControl(_ performHandler: @escaping (Bool, Error?) -> Void)
    func withExclusiveControl(beforeDate date: Date, perform performHandler: @escaping (Bool, Error?) -> Void)
}

extension BADownloadManager: DownloadManaging {}

/// A delegate as apps write it: not final, mutable properties, no Sendable anywhere.
class AssetDownloadObserver: NSObject, BADownloadManagerDelegate {
    var finishedIdentifiers: [String] = []
    var failures: [String: Error] = [:]
    var bytesByIdentifier: [String: Int64] = [:]
    let manager: DownloadManaging

    init(manager: DownloadManaging = BADownloadManager.shared) {
        self.manager = manager
        super.init()
        manager.delegate = self
    }

    func downloadDidBegin(_ download: BADownload) {}

    func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {
        bytesByIdentifier[download.identifier] = totalBytesWritten
    }

    func download(_ download: BADownload, failedWithError error: Error) {
        failures[download.identifier] = error
    }

    func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {
        finishedIdentifiers.append(download.identifier)
    }
}

/// A subclass, as apps do with a base observer.
class LoggingObserver: AssetDownloadObserver {
    var lines: [String] = []

    override func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {
        super.download(download, finishedWithFileURL: fileURL)
        lines.append("finished \(download.identifier)")
    }
}

/// A delegate that answers challenges with the completion-handler form only.
class CredentialProvider: NSObject, BADownloadManagerDelegate {
    var challenges = 0

    func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        challenges += 1
        completionHandler(.useCredential, URLCredential(user: "user", password: "secret", persistence: .forSession))
    }
}

/// Reads the catalog the extension put into the app group, under exclusive control.
func readCatalogClosureForm(
    manager: DownloadManaging, container: URL, completion: @escaping (Data?, Error?) -> Void
) {
    manager.withExclusiveControl(beforeDate: Date().addingTimeInterval(5)) { acquired, error in
        guard acquired else {
            completion(nil, error)
            return
        }
        completion(try? Data(contentsOf: container.appendingPathComponent("catalog.json")), nil)
    }
}

/// The same with the async form.
func readCatalogAsyncForm(container: URL) async throws -> Data? {
    try await BADownloadManager.shared.withExclusiveControl {
        try? Data(contentsOf: container.appendingPathComponent("catalog.json"))
    }
}

/// Re-queues a failed essential download, as the WWDC23 session's app does.
func requeue(_ download: BADownload, manager: DownloadManaging) throws -> BADownload {
    let background = download.removingEssential()
    try manager.scheduleDownload(background)
    return background
}

/// A large optional download kept off cellular and metered connections, as apps write it for
/// Apple's framework (on Linux: held while NetworkManager says the network is metered).
func scheduleOnUnmeteredNetworkOnly(_ url: URL, manager: DownloadManaging) throws {
    var request = URLRequest(url: url)
    request.allowsExpensiveNetworkAccess = false
    request.allowsConstrainedNetworkAccess = false
    request.allowsCellularAccess = false
    try manager.scheduleDownload(
        BAURLDownload(
            identifier: "hd-textures", request: request, fileSize: 512 * 1024 * 1024,
            applicationGroupIdentifier: "group.com.example.game"))
}
