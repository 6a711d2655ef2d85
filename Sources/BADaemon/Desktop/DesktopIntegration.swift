import BADesktopBus
import Foundation
import Synchronization

/// basd's part in the Linux desktop, over D-Bus (`docs/operations.md`): install progress on the
/// launcher (session bus, ``LauncherProgress``); NetworkManager's metered state and connectivity,
/// power-profiles-daemon's profile and logind's sleep (system bus, ``SleepInhibitor``).
///
/// Each bus is one ``DesktopBus`` connection with a thread of its own. A bus that is not there (a
/// container, CI, a server, `basd --no-desktop-bus`) is one log line, never an error: its features
/// keep today's behaviour (no launcher progress; downloads do not wait for a metered network; Low
/// Power Mode read from the power-profile file; no sleep inhibitor).
final class DesktopIntegration: Sendable {
    /// The user's session bus, when there is one.
    let session: DesktopBus?
    /// The system bus, when there is one.
    let system: DesktopBus?

    /// Connects to the buses `addresses` names, logging one line for each (connected, or why not
    /// and what basd does without it).
    init(addresses: DesktopBusAddresses, log: @escaping @Sendable (String) -> Void) {
        session = Self.connect(
            .session, address: addresses.session, without: "launcher progress is not shown", log: log)
        system = Self.connect(
            .system, address: addresses.system,
            without:
                "metered networks are not waited for; Low Power Mode is read from the power-profile file; "
                + "transfers are not checkpointed before sleep",
            log: log)
    }

    /// No buses (services built in process by tests).
    init() {
        session = nil
        system = nil
    }

    private static func connect(
        _ kind: DesktopBus.Kind, address: String?, without: String, log: @escaping @Sendable (String) -> Void
    ) -> DesktopBus? {
        guard let address else {
            log("desktop: no \(kind.rawValue) bus: \(without)")
            return nil
        }
        do {
            let bus = try DesktopBus.connect(kind, address: address) { log("desktop: \($0)") }
            log("desktop: connected to the \(kind.rawValue) bus at \(address)")
            return bus
        } catch {
            log("desktop: no \(kind.rawValue) bus (\(error)): \(without)")
            return nil
        }
    }

    /// Follows NetworkManager on the system bus: `changed` gets its properties (nil while it is
    /// not on the bus), on the bus thread.
    func watchNetworkManager(_ changed: @escaping @Sendable ([String: BusValue]?) -> Void) {
        system?.watchProperties(
            service: "org.freedesktop.NetworkManager", path: "/org/freedesktop/NetworkManager",
            interface: "org.freedesktop.NetworkManager", onChange: changed)
    }

    /// Follows power-profiles-daemon's `ActiveProfile` on the system bus, under its current name
    /// (`org.freedesktop.UPower.PowerProfiles`) and its older one (`net.hadess.PowerProfiles`;
    /// the current one says first when both are there): `changed` gets the profile
    /// (`power-saver`, `balanced`, `performance`), or nil while neither is on the bus; on the bus
    /// thread, once per change.
    func watchPowerProfiles(_ changed: @escaping @Sendable (String?) -> Void) {
        guard let system else { return }
        let profiles = PowerProfiles(changed)
        for name in PowerProfiles.names {
            let path = "/" + name.replacingOccurrences(of: ".", with: "/")
            system.watchProperties(service: name, path: path, interface: name) { properties in
                profiles.set(properties?["ActiveProfile"]?.stringValue, of: name)
            }
        }
    }

    /// Follows UPower's `OnBattery` (`org.freedesktop.UPower` at /org/freedesktop/UPower) on the
    /// system bus: `changed` gets whether the machine runs on battery, or nil while UPower is not
    /// on the bus; on the bus thread.
    func watchBattery(_ changed: @escaping @Sendable (Bool?) -> Void) {
        system?.watchProperties(
            service: "org.freedesktop.UPower", path: "/org/freedesktop/UPower", interface: "org.freedesktop.UPower"
        ) { properties in changed(properties?["OnBattery"]?.boolValue) }
    }

    /// The profile each of power-profiles-daemon's names says, and the one in force.
    private final class PowerProfiles: Sendable {
        /// The current name first.
        static let names = ["org.freedesktop.UPower.PowerProfiles", "net.hadess.PowerProfiles"]
        private let state = Mutex<(byName: [String: String], told: String??)>(([:], nil))
        private let changed: @Sendable (String?) -> Void

        init(_ changed: @escaping @Sendable (String?) -> Void) { self.changed = changed }

        func set(_ profile: String?, of name: String) {
            let tell: String?? = state.withLock { state in
                state.byName[name] = profile
                let byName = state.byName
                let now = Self.names.lazy.compactMap { byName[$0] }.first
                guard state.told != .some(now) else { return .none }
                state.told = .some(now)
                return .some(now)
            }
            if case .some(let profile) = tell { changed(profile) }
        }
    }

    /// Closes both connections (sends posted before go out first).
    func stop() {
        session?.close()
        system?.close()
    }
}
