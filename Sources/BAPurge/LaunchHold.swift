import Foundation

/// Why a finished file is kept until the app's next launch, whatever the free space: the app may
/// need it to start and has not yet had the chance to fetch it again.
///
/// The rule, applied when basd delivers a file (``atDelivery(essential:appHasLaunched:)``):
///
/// | the app has launched | essential download | hold |
/// |---|---|---|
/// | no | yes or no | ``firstLaunch`` |
/// | yes | yes | ``essential`` |
/// | yes | no | none: the usual rules |
///
/// Every launch of the app (a connection of its process to basd) releases all its holds: from then
/// on the app can download a purged file again, and ``AssetStatus`` follows the usual rules. An
/// update does not reset the app's first launch, so only its essential downloads are held: the
/// new version's essential content stays until the app launches again.
///
/// ```swift
/// let hold = LaunchHold.atDelivery(essential: download.isEssential, appHasLaunched: app.launched)
/// ```
package enum LaunchHold: String, Sendable, Equatable, Codable, CaseIterable {
    /// Delivered before the app's first launch (essential or not): nothing of the app has run yet
    /// that could fetch it again.
    case firstLaunch
    /// An essential download's file delivered after the app had launched (an update's essential
    /// content): the app has not launched since it arrived.
    case essential

    /// The hold a file gets when basd delivers it, or nil when the usual rules apply at once.
    ///
    /// - Parameters:
    ///   - essential: Whether the download was essential.
    ///   - appHasLaunched: Whether the app has launched (connected to basd) at least once.
    package static func atDelivery(essential: Bool, appHasLaunched: Bool) -> LaunchHold? {
        if !appHasLaunched { return .firstLaunch }
        return essential ? .essential : nil
    }

    /// The reason `ba purge --dry-run` shows for a file so held.
    package var reason: String {
        switch self {
        case .firstLaunch: "kept: the app has not launched yet"
        case .essential: "kept: essential, and the app has not launched since it was delivered"
        }
    }
}
