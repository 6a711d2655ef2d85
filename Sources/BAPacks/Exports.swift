// The download manifest's model lives in BAPackManifest (so BackgroundAssets reads it without
// linking libzstd and libcrypto); every user of BAPacks sees it as before.
@_exported import BAPackManifest

extension PackPublisher {
    /// The download manifest (``BAPackManifest/DownloadManifest``), by the name the publisher,
    /// basd and the tools have always used.
    package typealias DownloadManifest = BAPackManifest.DownloadManifest
}
