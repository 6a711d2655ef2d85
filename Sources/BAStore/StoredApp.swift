import Foundation

/// A registered app, as ``BAStore`` keeps it: one row of the `app` table.
///
/// Plain data. The store sets ``registeredAt`` and ``updatedAt`` itself; the values passed to
/// ``BAStore/register(_:)`` are ignored.
package struct StoredApp: Sendable, Hashable {
    /// `CFBundleIdentifier`: the app's key in every table.
    package var bundleIdentifier: String
    /// `CFBundleShortVersionString` (or `CFBundleVersion`) of the registered installation.
    package var version: String
    /// `BAAppGroupID`: the app group container shared by the app and its extension, if any.
    package var appGroupIdentifier: String?
    /// The app's directory (the one holding its `Info.plist`).
    package var appDirectory: String
    /// The extension's shared library, absolute (resolved from `BAExtensionPath`), if any.
    package var extensionPath: String?
    /// Whether the app's process has connected to basd at least once (first launch seen): the
    /// pre-launch restrictions apply only while this is false.
    package var launched: Bool
    /// When the app was first registered.
    package var registeredAt: Date
    /// When the registration last changed (update, first launch).
    package var updatedAt: Date
    /// `BAManifestURL`, if any.
    package var manifestURL: String?
    /// `BAInitialDownloadRestrictions`, `BAMaxInstallSize` and `BAEssentialMaxInstallSize`.
    package var restrictions: Restrictions
    /// Bytes counted against `BADownloadAllowance` before the first launch (the manifest and the
    /// declared sizes of non-essential downloads), kept across updates.
    package var allowanceUsed: Int64
    /// Bytes counted against `BAEssentialDownloadAllowance` before the first launch.
    package var essentialAllowanceUsed: Int64
    /// basd's scheduling state (periodic times, runtime allowance, quarantine) as JSON; opaque
    /// to the store.
    package var scheduling: String?

    /// The Info.plist restrictions of an app: nil means the key is absent (no limit).
    package struct Restrictions: Sendable, Hashable, Codable {
        /// `BADownloadAllowance`: bytes of non-essential downloads before the first launch.
        package var downloadAllowance: Int64?
        /// `BAEssentialDownloadAllowance`: bytes of essential downloads before the first launch.
        package var essentialDownloadAllowance: Int64?
        /// `BADownloadDomainAllowList`: hosts (or `*.` wildcards) downloads may use before the first launch.
        package var domainAllowList: [String]?
        /// `BAMaxInstallSize`: bytes of all downloads scheduled before the first launch.
        package var maxInstallSize: Int64?
        /// `BAEssentialMaxInstallSize`: bytes of essential downloads scheduled before the first launch.
        package var essentialMaxInstallSize: Int64?

        package init(
            downloadAllowance: Int64? = nil, essentialDownloadAllowance: Int64? = nil, domainAllowList: [String]? = nil,
            maxInstallSize: Int64? = nil, essentialMaxInstallSize: Int64? = nil
        ) {
            self.downloadAllowance = downloadAllowance
            self.essentialDownloadAllowance = essentialDownloadAllowance
            self.domainAllowList = domainAllowList
            self.maxInstallSize = maxInstallSize
            self.essentialMaxInstallSize = essentialMaxInstallSize
        }
    }

    /// Creates a registration to pass to ``BAStore/register(_:)``.
    package init(
        bundleIdentifier: String, version: String, appGroupIdentifier: String? = nil, appDirectory: String,
        extensionPath: String? = nil, launched: Bool = false, registeredAt: Date = Date(timeIntervalSince1970: 0),
        updatedAt: Date = Date(timeIntervalSince1970: 0), manifestURL: String? = nil,
        restrictions: Restrictions = Restrictions(), allowanceUsed: Int64 = 0, essentialAllowanceUsed: Int64 = 0,
        scheduling: String? = nil
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.version = version
        self.appGroupIdentifier = appGroupIdentifier
        self.appDirectory = appDirectory
        self.extensionPath = extensionPath
        self.launched = launched
        self.registeredAt = registeredAt
        self.updatedAt = updatedAt
        self.manifestURL = manifestURL
        self.restrictions = restrictions
        self.allowanceUsed = allowanceUsed
        self.essentialAllowanceUsed = essentialAllowanceUsed
        self.scheduling = scheduling
    }
}
