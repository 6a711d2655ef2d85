/// What `uninstallApp` did (`ba uninstall`): the answer is the same whether or not the app was
/// registered, so a package's removal hook can run it any number of times.
public struct UninstallReport: Sendable, Hashable, Codable {
    /// The app asked about.
    public var bundleIdentifier: String
    /// Whether basd had the app registered (false: there was nothing to do).
    public var wasRegistered: Bool
    /// The version that was registered.
    public var version: String?
    /// Active downloads that were cancelled (their partial files deleted).
    public var cancelledDownloads: Int
    /// The app group container that was deleted.
    public var removedContainer: String?
    /// Why the app group container was kept (`--keep-data`, another app shares the group).
    public var keptContainer: String?
    /// Why deleting the container failed, if it did (the registration is gone either way).
    public var containerError: String?

    /// Creates a report.
    public init(
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
