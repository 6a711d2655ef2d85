import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The protocol an app's downloader extension conforms to.
///
/// The system creates a fresh instance for every call, in a fresh process: an extension keeps no
/// memory between calls. Every requirement has a default, so implement only what you need.
///
/// ```swift
/// import BackgroundAssets
/// import Foundation
/// import FoundationNetworking
///
/// struct GameAssets: BADownloaderExtension {
///     func downloads(for request: BAContentRequest, manifestURL: URL,
///                    extensionInfo: BAAppExtensionInfo) -> Set<BADownload> {
///         let url = URL(string: "https://cdn.example.com/level-1.pak")!
///         return [BAURLDownload(identifier: "level-1", request: URLRequest(url: url),
///                               essential: request != .periodic, fileSize: 1_048_576,
///                               applicationGroupIdentifier: "group.com.example.game")]
///     }
/// }
///
/// // Export it (one line; see BAExportExtension):
/// @_cdecl("ba_extension_descriptor")
/// public func baExtensionDescriptor() -> UnsafeRawPointer { BAExportExtension(GameAssets.self) }
/// ```
public protocol BADownloaderExtension {
    /// Creates the extension; called once per call.
    init()

    /// Returns the downloads to schedule for an install, update or periodic check.
    ///
    /// `manifestURL` is a read-only local copy of the app's manifest, deleted after the call.
    /// Return downloads here: scheduling through ``BADownloadManager`` while this runs is refused.
    /// Essential downloads are only honoured for `.install` and `.update`.
    func downloads(for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo) -> Set<
        BADownload
    >

    /// Answers an authentication challenge for a download when no app is running.
    func backgroundDownload(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)

    /// Called when a download failed and no app is running.
    func backgroundDownload(_ failedDownload: BADownload, failedWithError error: any Error)

    /// Called when a download finished and no app is running. The file is in the app group
    /// container and is deleted after this returns unless you move it.
    func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL)

    /// Called shortly before the system ends the extension's process.
    func extensionWillTerminate()

    /// The 2022 install entry point; the default `downloads(for:…)` calls it for `.install`.
    @available(*, deprecated, renamed: "downloads(for:manifestURL:extensionInfo:)")
    func applicationDidInstall(metadata: BAAppExtensionInfo) -> Set<BADownload>
    /// The 2022 update entry point; the default `downloads(for:…)` calls it for `.update`.
    @available(*, deprecated, renamed: "downloads(for:manifestURL:extensionInfo:)")
    func applicationDidUpdate(metadata: BAAppExtensionInfo) -> Set<BADownload>
    /// The 2022 periodic entry point; the default `downloads(for:…)` calls it for `.periodic`.
    @available(*, deprecated, renamed: "downloads(for:manifestURL:extensionInfo:)")
    func checkForUpdates(metadata: BAAppExtensionInfo) -> Set<BADownload>
    /// The 2022 failure callback; the default `backgroundDownload(_:failedWithError:)` calls it.
    @available(*, deprecated, renamed: "backgroundDownload(_:failedWithError:)")
    func backgroundDownloadDidFail(failedDownload: BADownload)
    /// The 2022 finish callback; the default `backgroundDownload(_:finishedWithFileURL:)` calls it.
    @available(*, deprecated, renamed: "backgroundDownload(_:finishedWithFileURL:)")
    func backgroundDownloadDidFinish(finishedDownload: BADownload, fileURL: URL)
}

extension BADownloaderExtension {
    public func downloads(for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo) -> Set<
        BADownload
    > {
        switch request {
        case .install: applicationDidInstall(metadata: extensionInfo)
        case .update: applicationDidUpdate(metadata: extensionInfo)
        case .periodic: checkForUpdates(metadata: extensionInfo)
        }
    }

    public func backgroundDownload(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    {
        (.performDefaultHandling, nil)
    }

    public func backgroundDownload(_ failedDownload: BADownload, failedWithError error: any Error) {
        backgroundDownloadDidFail(failedDownload: failedDownload)
    }

    public func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL) {
        backgroundDownloadDidFinish(finishedDownload: finishedDownload, fileURL: fileURL)
    }

    public func extensionWillTerminate() {}

    public func applicationDidInstall(metadata: BAAppExtensionInfo) -> Set<BADownload> { [] }
    public func applicationDidUpdate(metadata: BAAppExtensionInfo) -> Set<BADownload> { [] }
    public func checkForUpdates(metadata: BAAppExtensionInfo) -> Set<BADownload> { [] }
    public func backgroundDownloadDidFail(failedDownload: BADownload) {}
    public func backgroundDownloadDidFinish(finishedDownload: BADownload, fileURL: URL) {}
}
