import BADaemonProtocol
import BAStore

/// What the ``AppInstaller`` does to transfers (``TransferCoordinator`` conforms): what an
/// extension's answer does (``EventTransfers``), and the manifest fetch, the allowances left, a
/// download's listing and an uninstall's dropped transfers. A test gives the installer a fake
/// without an engine. Executor only.
protocol InstallerTransfers: EventTransfers {
    /// Fetches the manifest at `url` for a content-request call of `app` (see
    /// ``TransferCoordinator/fetchManifest(_:for:done:)``); `done` gets it later, on the executor.
    func fetchManifest(
        _ url: String, for app: StoredApp,
        done:
            @escaping @Sendable (Result<TransferCoordinator.FetchedManifest, TransferCoordinator.ManifestFailure>) ->
            Void)

    /// What is left of the app's pre-launch download allowances (nil: none applies).
    func remainingAllowances(of app: StoredApp) -> (nonEssential: Int64?, essential: Int64?)

    /// A stored download as a listing shows it (with a running transfer's latest bytes).
    func info(_ download: StoredDownload) -> DownloadInfo

    /// Drops the transfers of downloads an uninstall deleted.
    func drop(_ downloads: [StoredDownload])

    /// The transfer folders of app group `group` were deleted: prepared again when next needed.
    func forgetPreparedGroup(_ group: String)
}

extension TransferCoordinator: InstallerTransfers {
    func forgetPreparedGroup(_ group: String) { preparedGroups.remove(group) }
}
