import BADesktopBus
import Foundation

/// The D-Bus buses basd talks to the desktop on (``DesktopIntegration``): the user's session bus
/// (launcher progress) and the system bus (NetworkManager, power-profiles-daemon). A nil address:
/// that bus is not used.
package struct DesktopBusAddresses: Sendable, Equatable {
    package var session: String?
    package var system: String?

    package init(session: String?, system: String?) {
        self.session = session
        self.system = system
    }

    /// Neither bus (`basd --no-desktop-bus`, and services built in process by tests).
    package static let none = DesktopBusAddresses(session: nil, system: nil)

    /// The buses the environment names (`$DBUS_SESSION_BUS_ADDRESS` or `$XDG_RUNTIME_DIR/bus`;
    /// `$DBUS_SYSTEM_BUS_ADDRESS` or the system bus's default socket).
    package static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    )
        -> DesktopBusAddresses
    {
        DesktopBusAddresses(
            session: BusAddress.session(environment) { FileManager.default.fileExists(atPath: $0) },
            system: BusAddress.system(environment))
    }
}
