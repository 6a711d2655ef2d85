import Foundation

/// A registered app, as ``BAStore`` keeps it: one row of the `app` table.
///
/// Plain data. The store sets ``registeredAt`` and ``updatedAt`` itself; the values passed to
/// ``BAStore/register(_:)`` are ignored.
public struct StoredApp: Sendable, Hashable {
    /// `CFBundleIdentifier`: the app's key in every table.
    public var bundleIdentifier: String
    /// `CFBundleShortVersionString` (or `CFBundleVersion`) of the registered installation.
    public var version: String
    /// `BAAppGroupID`: the app group container shared by the app and its extension, if any.
    public var appGroupIdentifier: String?
    /// The app's directory (the one holding its `Info.plist`).
    public var appDirectory: String
    /// The extension's shared library, absolute (resolved from `BAExtensionPath`), if any.
    public var extensionPath: String?
    /// Whether the app's process has connected to basd at least once (first launch seen): the
    /// pre-launch restrictions apply only while this is false.
    public var launched: Bool
    /// When the app was first registered.
    public var registeredAt: Date
    /// When the registration last changed (update, first launch).
    public var updatedAt: Date

    /// Creates a registration to pass to ``BAStore/register(_:)``.
    public init(
        bundleIdentifier: String, version: String, appGroupIdentifier: String? = nil, appDirectory: String,
        extensionPath: String? = nil, launched: Bool = false, registeredAt: Date = Date(timeIntervalSince1970: 0),
        updatedAt: Date = Date(timeIntervalSince1970: 0)
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.version = version
        self.appGroupIdentifier = appGroupIdentifier
        self.appDirectory = appDirectory
        self.extensionPath = extensionPath
        self.launched = launched
        self.registeredAt = registeredAt
        self.updatedAt = updatedAt
    }
}
