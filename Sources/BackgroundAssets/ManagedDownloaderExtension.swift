import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The configuration of a ``ManagedDownloaderExtension``.
///
/// Apple's `ManagedDownloaderExtension` requires `Self.Configuration: ManagedDownloaderExtensionConfiguration`;
/// here ``BADownloaderExtension/configuration`` is an existential, so this protocol only marks a
/// managed extension's configuration. The default one is
/// ``BADefaultManagedDownloaderExtensionConfiguration``.
public protocol ManagedDownloaderExtensionConfiguration: BADownloaderExtensionConfiguration {}

/// Linux addition: the configuration every ``ManagedDownloaderExtension`` has unless it supplies its own.
public struct BADefaultManagedDownloaderExtensionConfiguration: ManagedDownloaderExtensionConfiguration {
    /// Creates the default managed configuration.
    public init() {}
}

/// An app extension that lets the system schedule its asset-pack downloads automatically.
///
/// basd downloads the app's asset packs as its download manifest's policies say (`docs/packs.md`).
/// Before it downloads the essential and prefetch packs of an install or an update, it asks the
/// extension, once per event and in one process, whether to download each of them: implement
/// ``shouldDownload(_:)`` to filter out packs this device does not need. A declined pack is not
/// downloaded for that event; it stays available, and the app can still ask for it
/// (`AssetPackManager.ensureLocalAvailability(of:)`, `ba packs ensure`).
///
/// The protocol provides defaults for every inherited ``BADownloaderExtension`` requirement. As
/// on Apple's system, do not implement them, except, optionally,
/// ``BADownloaderExtension/backgroundDownload(_:didReceive:)``.
///
/// ```swift
/// import BackgroundAssets
/// import ExtensionFoundation
///
/// @main
/// struct DownloaderExtension: ManagedDownloaderExtension {
///     func shouldDownload(_ assetPack: AssetPack) -> Bool {
///         assetPack.id != "high-resolution-textures"
///     }
/// }
/// ```
///
/// If the call fails (a crash, the deadline, the memory cap, a quarantined extension), every pack
/// is downloaded, the system default, and the run is recorded like any other call.
public protocol ManagedDownloaderExtension: BADownloaderExtension {
    /// Whether the system should download `assetPack`, a candidate for the current install or
    /// update.
    ///
    /// By default, the system automatically downloads all applicable asset packs with either
    /// essential or prefetch download policies for the current installation event type.
    /// Implement this method to filter out unwanted asset packs at runtime; the default returns
    /// `true`.
    /// - Parameter assetPack: An asset pack that's being considered as a candidate to be downloaded.
    /// - Returns: Whether the asset pack should be downloaded.
    func shouldDownload(_ assetPack: AssetPack) -> Bool
}

extension ManagedDownloaderExtension {
    public func shouldDownload(_ assetPack: AssetPack) -> Bool { true }

    public var configuration: any BADownloaderExtensionConfiguration {
        BADefaultManagedDownloaderExtensionConfiguration()
    }

    /// The system schedules a managed extension's asset packs itself: no downloads of its own.
    public func downloads(
        for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo
    ) -> Set<BADownload> {
        []
    }
}
