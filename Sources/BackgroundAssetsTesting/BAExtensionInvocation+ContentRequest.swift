import BAExtensionHost
import BackgroundAssets

// The invocation for a content request, in Apple's types (the host itself links only the core).
extension BAExtensionInvocation {
    /// A `downloads(for:manifestURL:extensionInfo:)` call.
    public static func contentRequest(
        _ request: BAContentRequest, libraryPath: String, manifestPath: String, manifestURL: String = "",
        extensionInfo: BAAppExtensionInfo = BAAppExtensionInfo(
            restrictedDownloadSizeRemaining: nil, restrictedEssentialDownloadSizeRemaining: nil)
    ) -> BAExtensionInvocation {
        BAExtensionInvocation(
            libraryPath: libraryPath,
            event: .contentRequest(
                request: Int32(request.rawValue), manifestPath: manifestPath,
                manifestURL: manifestURL.isEmpty ? "file://" + manifestPath : manifestURL,
                restrictedRemaining: Int64(extensionInfo.restrictedDownloadSizeRemaining ?? -1),
                restrictedEssentialRemaining: Int64(extensionInfo.restrictedEssentialDownloadSizeRemaining ?? -1)))
    }
}
