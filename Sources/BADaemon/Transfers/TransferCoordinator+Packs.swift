import BACore
import BADaemonProtocol
import BADownloadEngine
import BAStore

// Self-hosted asset pack downloads (issue 35, `AssetPack.download(for:)`): the window admits,
// orders and stops them as any download, the pack service fetches and installs the pack, and
// what it reports is recorded as the engine's transfers are (executor).
extension TransferCoordinator {
    /// Hands a pack download to the pack service instead of the engine.
    func startPack(_ download: StoredDownload) {
        packDownloads.insert(download.uniqueIdentifier)
        delegate?.transfers(self, startPack: download)
    }

    /// What the pack service reports of pack download `id`, recorded as the engine's event: the
    /// app and its extension hear `began`, progress, and `finished` with the pack's folder (or
    /// `failed` with why).
    func packDownload(_ id: String, report: SelfHostedPackReport) {
        guard packDownloads.contains(id) else { return }
        switch report {
        case .began:
            handle([.began(id: id, offset: 0, isForeground: false)])
        case .progress(let bytes, let total):
            handle([.progress(id: id, bytesWritten: bytes, totalBytes: total)])
        case .finished(let path, let size):
            handle([.finished(id: id, path: path, size: size, sha256: "", receivedBytes: size)])
            packDownloads.remove(id)
        case .failed(let failure):
            log("download \(id): the asset pack failed: \(failure.message)")
            packDownloads.remove(id)
            handle([.failed(id: id, error: DownloadError(Self.code(of: failure), failure.message))])
        }
    }

    /// The engine's code a pack failure is reported with (``DownloadFailure`` maps it to Apple's).
    static func code(of failure: PackFailure) -> DownloadError.Code {
        if failure.code == PackJobMachine.invalidMetadataCode || failure.code == AppleErrorCode.downloadInvalid.rawValue
        {
            return .checksumMismatch
        }
        if failure.errno != nil { return .fileSystem }
        return .network
    }
}
