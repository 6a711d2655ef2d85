/// Where the user's session bus and the system bus are, read from the environment the way
/// libdbus and sd-bus read it, without I/O: `$DBUS_SESSION_BUS_ADDRESS`, else
/// `$XDG_RUNTIME_DIR/bus` (when it exists); `$DBUS_SYSTEM_BUS_ADDRESS`, else
/// `/run/dbus/system_bus_socket`.
package enum BusAddress {
    /// The system bus's socket when `$DBUS_SYSTEM_BUS_ADDRESS` does not say otherwise.
    package static let defaultSystem = "unix:path=/run/dbus/system_bus_socket"

    /// The session bus's address, or nil when the environment names none.
    /// - Parameter exists: whether a path exists (tests answer without a file system).
    package static func session(_ environment: [String: String], exists: (String) -> Bool) -> String? {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        guard let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty, exists(runtime + "/bus") else {
            return nil
        }
        return "unix:path=\(runtime)/bus"
    }

    /// The system bus's address.
    package static func system(_ environment: [String: String]) -> String {
        if let address = environment["DBUS_SYSTEM_BUS_ADDRESS"], !address.isEmpty { return address }
        return defaultSystem
    }
}
