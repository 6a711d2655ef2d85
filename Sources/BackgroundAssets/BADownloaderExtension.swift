import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The 2022 entry points and `extensionWillTerminate()`, which ``BADownloaderExtension``
/// redeclares as deprecated, as Apple does.
///
/// Not for direct use: the library calls them through this protocol, where they are not
/// deprecated, so its own build prints no deprecation warning. Implement them (if at all) in
/// your ``BADownloaderExtension`` type.
public protocol _BADownloaderExtensionLegacyEntryPoints {
    /// See ``BADownloaderExtension/extensionWillTerminate()``.
    func extensionWillTerminate()
    /// See ``BADownloaderExtension/applicationDidInstall(metadata:)``.
    func applicationDidInstall(metadata: BAAppExtensionInfo) -> Set<BADownload>
    /// See ``BADownloaderExtension/applicationDidUpdate(metadata:)``.
    func applicationDidUpdate(metadata: BAAppExtensionInfo) -> Set<BADownload>
    /// See ``BADownloaderExtension/checkForUpdates(metadata:)``.
    func checkForUpdates(metadata: BAAppExtensionInfo) -> Set<BADownload>
    /// See ``BADownloaderExtension/backgroundDownloadDidFail(failedDownload:)``.
    func backgroundDownloadDidFail(failedDownload: BADownload)
    /// See ``BADownloaderExtension/backgroundDownloadDidFinish(finishedDownload:fileURL:)``.
    func backgroundDownloadDidFinish(finishedDownload: BADownload, fileURL: URL)
}

extension _BADownloaderExtensionLegacyEntryPoints {
    public func extensionWillTerminate() {}
    public func applicationDidInstall(metadata: BAAppExtensionInfo) -> Set<BADownload> { [] }
    public func applicationDidUpdate(metadata: BAAppExtensionInfo) -> Set<BADownload> { [] }
    public func checkForUpdates(metadata: BAAppExtensionInfo) -> Set<BADownload> { [] }
    public func backgroundDownloadDidFail(failedDownload: BADownload) {}
    public func backgroundDownloadDidFinish(finishedDownload: BADownload, fileURL: URL) {}
}

/// Calls the 2022 entry points and `extensionWillTerminate()` without a deprecation warning.
enum LegacyEntryPoints {
    static func downloads<E: _BADownloaderExtensionLegacyEntryPoints>(
        _ instance: E, for request: BAContentRequest, _ info: BAAppExtensionInfo
    ) -> Set<BADownload> {
        switch request {
        case .install: instance.applicationDidInstall(metadata: info)
        case .update: instance.applicationDidUpdate(metadata: info)
        case .periodic: instance.checkForUpdates(metadata: info)
        case .languageChange: []  // the 2022 API had no language-change entry point
        }
    }
    static func failed<E: _BADownloaderExtensionLegacyEntryPoints>(_ instance: E, _ download: BADownload) {
        instance.backgroundDownloadDidFail(failedDownload: download)
    }
    static func finished<E: _BADownloaderExtensionLegacyEntryPoints>(
        _ instance: E, _ download: BADownload, _ fileURL: URL
    ) {
        instance.backgroundDownloadDidFinish(finishedDownload: download, fileURL: fileURL)
    }
    static func willTerminate<E: _BADownloaderExtensionLegacyEntryPoints>(_ instance: E) {
        instance.extensionWillTerminate()
    }
}

/// The protocol an app's downloader extension conforms to.
///
/// The system creates a fresh instance for every call; several events waiting for the extension
/// are handed to it one after another in one process, but a later call may be a fresh process, so
/// an extension keeps nothing between calls. Every requirement has a default, so implement only what you need.
/// Mark the type `@main`, as on Apple's system: that is how the system finds it in the library.
///
/// ```swift
/// import BackgroundAssets
///
/// @main
/// struct GameAssets: BADownloaderExtension {
///     func downloads(for request: BAContentRequest, manifestURL: URL,
///                    extensionInfo: BAAppExtensionInfo) -> Set<BADownload> {
///         let url = URL(string: "https://cdn.example.com/level-1.pak")!
///         return [BAURLDownload(identifier: "level-1", request: URLRequest(url: url),
///                               essential: request != .periodic, fileSize: 1_048_576,
///                               applicationGroupIdentifier: "group.com.example.game")]
///     }
/// }
/// ```
/// The explicit export still works (instead of `@main`; see ``BAExportExtension(_:name:version:)``):
/// ```swift
/// @_cdecl("ba_extension_descriptor")
/// public func baExtensionDescriptor() -> UnsafeRawPointer { BAExportExtension(GameAssets.self) }
/// ```
public protocol BADownloaderExtension: _BADownloaderExtensionLegacyEntryPoints {
    /// Creates the extension; called once per call.
    init()

    /// The extension's configuration (Apple's comes from `AppExtension`); the default serves.
    var configuration: any BADownloaderExtensionConfiguration { get }

    /// Returns the downloads to schedule for an install, update, periodic check or language change.
    ///
    /// `manifestURL` is a read-only local copy of the app's manifest, deleted after the call.
    /// Return downloads here: scheduling through ``BADownloadManager`` while this runs is refused.
    /// Essential downloads are only honoured for `.install` and `.update`.
    func downloads(
        for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo
    ) -> Set<
        BADownload
    >

    /// Answers an authentication challenge for a download when no app is running.
    func backgroundDownload(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge
    ) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)

    /// Called when a download failed and no app is running.
    func backgroundDownload(_ failedDownload: BADownload, failedWithError error: any Error)

    /// Called when a download finished and no app is running. The file is in the app group
    /// container and is deleted after this returns unless you move it.
    func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL)

    /// Called shortly before the system ends the extension's process (still called here when the
    /// host ends a call at its deadline; Apple deprecated it and no longer promises the call).
    @available(*, deprecated, message: "the system may end the extension without calling it")
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

/// An extension's configuration. On Apple's system it refines ExtensionFoundation's
/// `AppExtensionConfiguration`, which Linux does not have; here it only names the type.
public protocol BADownloaderExtensionConfiguration: Sendable {}

/// Linux addition: the configuration every extension has unless it supplies its own.
public struct BADefaultDownloaderExtensionConfiguration: BADownloaderExtensionConfiguration {
    /// Creates the default configuration.
    public init() {}
}

extension BADownloaderExtension {
    public var configuration: any BADownloaderExtensionConfiguration { BADefaultDownloaderExtensionConfiguration() }

    public func downloads(
        for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo
    ) -> Set<
        BADownload
    > {
        LegacyEntryPoints.downloads(self, for: request, extensionInfo)
    }

    public func backgroundDownload(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge
    ) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    {
        (.performDefaultHandling, nil)
    }

    public func backgroundDownload(_ failedDownload: BADownload, failedWithError error: any Error) {
        LegacyEntryPoints.failed(self, failedDownload)
    }

    public func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL) {
        LegacyEntryPoints.finished(self, finishedDownload, fileURL)
    }
}
