internal import BAPackManifest
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension AssetPack {
    /// Where a pack of a self-hosted manifest comes from: its entry's index and policy, and the
    /// app group the manifest was read for.
    struct SelfHostedSource: Sendable, Hashable, Codable {
        /// The http(s) URL of the pack's index (the entry's `url`).
        var indexURL: String
        /// The index's SHA-256 (the entry's `indexSHA256`): the pack's files are checked against it.
        var indexSHA256: String
        var downloadPolicy: PackDownloadPolicy
        /// The app group the pack is installed into (``AssetPackManifest/init(from:appGroupID:)``'s).
        var appGroupID: String
    }

    /// Creates a download object for the asset pack that you schedule using a download manager.
    ///
    /// For a pack of a self-hosted manifest (``AssetPackManifest/init(contentsOf:appGroupID:)``):
    /// a ``BAURLDownload`` of the pack (its ``BADownload/identifier`` is the pack's ID, its request
    /// the GET of the pack's index, its `fileSize` the pack's download size, its app group the
    /// manifest's), which the system installs into the app group once every file matches the
    /// index's SHA-256. Essential only for an `install` (or `update`) request and a pack whose
    /// policy is essential with `firstInstallation` (or `subsequentUpdate`).
    ///
    /// A managed pack (from ``AssetPackManager``) has no self-hosted source: its download has no
    /// URL, and scheduling it fails with ``BAError/Code/downloadInvalid`` saying so; make a managed
    /// pack local with ``AssetPackManager/ensureLocalAvailability(of:)``.
    ///
    /// - Parameter contentRequest: The content request for the current extension invocation.
    ///   Pass `nil` if you're calling this method in your main app.
    /// - Returns: A download object.
    public func download(for contentRequest: BAContentRequest?) -> BADownload {
        let occasion = SelfHostedPackRule.Occasion(contentRequest)
        guard let source = selfHosted else {
            var request = URLRequest(url: URL(fileURLWithPath: "/"))
            request.url = nil
            return BAURLDownload(
                identifier: id, uniqueIdentifier: UUID().uuidString, state: .created, request: request,
                essential: false, fileSize: downloadSize, applicationGroupIdentifier: "", priority: .default,
                expectedSHA256: nil, isAssetPack: true)
        }
        var request = URLRequest(url: URL(fileURLWithPath: "/"))
        request.url = URL(string: source.indexURL)
        request.httpMethod = "GET"
        return BAURLDownload(
            identifier: id, uniqueIdentifier: UUID().uuidString, state: .created, request: request,
            essential: SelfHostedPackRule.essential(source.downloadPolicy, on: occasion) ?? false,
            fileSize: downloadSize, applicationGroupIdentifier: source.appGroupID, priority: .default,
            expectedSHA256: source.indexSHA256, isAssetPack: true)
    }
}

extension SelfHostedPackRule.Occasion {
    /// The occasion of a content request (nil: the app itself).
    init(_ request: BAContentRequest?) {
        switch request {
        case nil: self = .app
        case .install?: self = .install
        case .update?: self = .update
        case .periodic?: self = .periodic
        case .languageChange?: self = .languageChange
        }
    }
}
