internal import BADaemonProtocol

extension AssetPackManager {
    /// Linux addition: what making an asset pack local now would take, as basd knows it before
    /// the download starts (Google Play's rule: an app asks the user before a large download on a
    /// metered network). Apple's API has no place for it: ``AssetPack/downloadSize`` stays the
    /// manifest's size of the whole version, and ``status(relativeTo:)`` answers flags only.
    public struct DownloadEstimate: Sendable, Hashable {
        /// The compressed bytes it will fetch: 0 when the pack is current; the manifest's download
        /// size (at most what it fetches) until basd has read the version's index; then what the
        /// plan against the local version still fetches (an update: its delta). Nil when the
        /// manifest no longer lists the pack.
        public let bytesToFetch: Int64?
        /// The bytes it will write to disk (the files not there yet), once basd has read the
        /// version's index; nil before.
        public let bytesToWrite: Int64?
        /// True when it waits for a network that is not metered: it is neither essential nor
        /// asked for, and has more than basd's `meteredPackConsentBytes` (default 200 MB) to
        /// fetch, or basd's `waitOnMeteredNetwork` holds background work. Asking for it
        /// (``AssetPackManager/ensureLocalAvailability(of:)``) is consent: it starts at once.
        /// False when it waits for nothing or for something else.
        public let waitsForMeteredNetwork: Bool

        /// An estimate with these figures.
        public init(bytesToFetch: Int64?, bytesToWrite: Int64?, waitsForMeteredNetwork: Bool) {
            self.bytesToFetch = bytesToFetch
            self.bytesToWrite = bytesToWrite
            self.waitsForMeteredNetwork = waitsForMeteredNetwork
        }
    }

    /// Linux addition: what making `assetPack` local now would fetch and write (``DownloadEstimate``).
    ///
    /// ```swift
    /// let estimate = try await AssetPackManager.shared.downloadEstimate(for: pack)
    /// if let bytes = estimate.bytesToFetch, bytes > 200_000_000 { /* ask the user first */ }
    /// ```
    ///
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` when basd has no such
    ///   pack for the app, or the connection's error.
    public func downloadEstimate(for assetPack: AssetPack) async throws -> DownloadEstimate {
        let info = try await call(PackCommand(action: .list)).first { $0.assetPackID == assetPack.id }
        guard let info else { throw ManagedBackgroundAssetsError.assetPackNotFound(withID: assetPack.id) }
        return DownloadEstimate(
            bytesToFetch: info.fetchBytes, bytesToWrite: info.writeBytes,
            waitsForMeteredNetwork: info.waitingFor == .meteredNetwork)
    }
}
