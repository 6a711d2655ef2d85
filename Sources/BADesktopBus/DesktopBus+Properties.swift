import Synchronization

extension DesktopBus {
    /// Follows the properties of `interface` at `path` of the service `service` (a well-known
    /// name such as `org.freedesktop.NetworkManager`): `onChange` gets them all, at once when the
    /// service runs and again after every change (`PropertiesChanged`, merged) and every restart
    /// of the service (`NameOwnerChanged`: read again with `GetAll`); nil when the service is not
    /// on the bus or leaves it, or the bus goes away. Called on the bus thread; hand the work on.
    ///
    /// The service is never started for basd (no auto-start).
    package func watchProperties(
        service: String, path: String, interface: String,
        onChange: @escaping @Sendable ([String: BusValue]?) -> Void
    ) {
        let watch = PropertyWatch(service: service, path: path, interface: interface, onChange: onChange)
        // The matches first, so no change between the read and the match is missed.
        subscribe(
            "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
                + "path='\(path)',arg0='\(interface)'"
        ) { message in watch.changed(message) }
        subscribe(
            "type='signal',interface='org.freedesktop.DBus',member='NameOwnerChanged',"
                + "path='/org/freedesktop/DBus',arg0='\(service)'"
        ) { [weak self] message in
            guard message.arguments.count == 3, let owner = message.string(2) else { return }
            if owner.isEmpty {
                watch.gone()
            } else if let self {
                watch.readAll(on: self)
            }
        }
        onLoss { watch.gone() }
        onReconnect { [weak self] in
            if let self { watch.readAll(on: self) }
        }
        watch.readAll(on: self)
    }

    /// One watched object's properties, as last read (bus thread; the mutex only satisfies
    /// Sendable closures).
    private final class PropertyWatch: Sendable {
        let service: String
        let path: String
        let interface: String
        let onChange: @Sendable ([String: BusValue]?) -> Void
        private let properties = Mutex<[String: BusValue]?>(nil)
        /// Whether "not on the bus" was told (told once, not for every failed read).
        private let toldGone = Mutex(false)

        init(
            service: String, path: String, interface: String,
            onChange: @escaping @Sendable ([String: BusValue]?) -> Void
        ) {
            self.service = service
            self.path = path
            self.interface = interface
            self.onChange = onChange
        }

        func readAll(on bus: DesktopBus) {
            bus.call(
                destination: service, path: path, interface: "org.freedesktop.DBus.Properties", member: "GetAll",
                arguments: [.value(.string(interface))]
            ) { [self] reply in
                switch reply {
                case .success(let reply):
                    guard case .dictionary(let all)? = reply.arguments.first else { return gone() }
                    properties.withLock { $0 = all }
                    toldGone.withLock { $0 = false }
                    onChange(all)
                case .failure:
                    gone()
                }
            }
        }

        func changed(_ message: BusMessage) {
            guard message.string(0) == interface, message.arguments.count >= 2,
                case .dictionary(let changes) = message.arguments[1]
            else { return }
            let invalidated: [String] = {
                if message.arguments.count >= 3, case .strings(let names) = message.arguments[2] { return names }
                return []
            }()
            let now = properties.withLock { properties -> [String: BusValue] in
                var merged = properties ?? [:]
                merged.merge(changes) { $1 }
                for name in invalidated { merged[name] = nil }
                properties = merged
                return merged
            }
            toldGone.withLock { $0 = false }
            onChange(now)
        }

        func gone() {
            properties.withLock { $0 = nil }
            guard
                !toldGone.withLock({ told in
                    defer { told = true }
                    return told
                })
            else { return }
            onChange(nil)
        }
    }
}
