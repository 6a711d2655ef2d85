/// What `uninstallApp` did (`ba uninstall`): the answer is the same whether or not the app was
/// registered, so a package's removal hook can run it any number of times.
package struct UninstallReport: Sendable, Hashable, Codable {
    /// The app asked about.
    package var bundleIdentifier: String
    /// Whether basd had the app registered (false: there was nothing to do).
    package var wasRegistered: Bool
    /// The version that was registered.
    package var version: String?
    /// Active downloads that were cancelled (their partial files deleted).
    package var cancelledDownloads: Int
    /// The app group container that was deleted.
    package var removedContainer: String?
    /// Why the app group container was kept (`--keep-data`, another app shares the group).
    package var keptContainer: String?
    /// Why deleting the container failed, if it did (the registration is gone either way).
    package var containerError: String?

    /// Creates a report.
    package init(
        bundleIdentifier: String, wasRegistered: Bool, version: String? = nil, cancelledDownloads: Int = 0,
        removedContainer: String? = nil, keptContainer: String? = nil, containerError: String? = nil
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.wasRegistered = wasRegistered
        self.version = version
        self.cancelledDownloads = cancelledDownloads
        self.removedContainer = removedContainer
        self.keptContainer = keptContainer
        self.containerError = containerError
    }
}
