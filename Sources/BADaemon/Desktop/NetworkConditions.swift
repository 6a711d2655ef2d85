import BADaemonProtocol
import BADesktopBus

/// What NetworkManager says of the network (`Metered`, `Connectivity` of
/// `org.freedesktop.NetworkManager`), and who waits for what because of it and of Low Power
/// Mode, without I/O (``TransferCoordinator`` applies it; `NetworkConditionsTests` holds the table).
struct NetworkConditions: Equatable, Sendable {
    /// NetworkManager's `NMConnectivityState`.
    enum Connectivity: UInt32, Sendable {
        case unknown = 0
        case none, portal, limited, full

        /// None, behind a captive portal, or limited: background attempts would fail (a portal
        /// answers for the server) and burn retries.
        var isRestricted: Bool { hold != nil }

        /// What a background transfer waits for under this connectivity, or nil (full, or not
        /// known: without NetworkManager the engine's retries and the netlink monitor cover it).
        var hold: Hold? {
            switch self {
            case .none: .offline
            case .portal: .captivePortal
            case .limited: .limitedConnectivity
            case .unknown, .full: nil
            }
        }
    }

    /// Metered (NetworkManager's `NMMetered` yes or guess-yes).
    var metered: Bool
    var connectivity: Connectivity

    /// No NetworkManager on the bus (or no bus): not metered, connectivity unknown (not restricted).
    static let unknown = NetworkConditions(metered: false, connectivity: .unknown)

    /// From NetworkManager's properties; nil (not on the bus): ``unknown``.
    init(properties: [String: BusValue]?) {
        // NMMetered: 0 unknown, 1 yes, 2 no, 3 guess-yes, 4 guess-no.
        let metered = properties?["Metered"]?.unsignedValue ?? 0
        self.metered = metered == 1 || metered == 3
        self.connectivity =
            (properties?["Connectivity"]?.unsignedValue).flatMap { UInt32(exactly: $0) }
            .flatMap(Connectivity.init(rawValue:)) ?? .unknown
    }

    init(metered: Bool, connectivity: Connectivity) {
        self.metered = metered
        self.connectivity = connectivity
    }

    /// Why a transfer is held, as listings say it (`waitingFor`).
    enum Hold: String, Equatable, Sendable {
        case lowPowerMode
        case meteredNetwork
        /// NetworkManager's connectivity is none: no network at all.
        case offline
        /// NetworkManager found a captive portal: a login page answers for every server.
        case captivePortal
        /// NetworkManager's connectivity is limited: a network, but not the internet.
        case limitedConnectivity
    }

    /// What a transfer is, for the rules.
    struct Transfer: Equatable, Sendable {
        /// Foreground or essential: someone waits for it.
        var isUrgent: Bool
        /// The request allows an expensive network (`allowsExpensiveNetworkAccess` and its kin).
        var allowsMetered: Bool
    }

    /// Why `transfer` waits now, or nil when it may run:
    /// - a request that disallows expensive networks waits while the network is metered, urgent or not;
    /// - other urgent transfers never wait;
    /// - a background one waits in Low Power Mode, while the network is metered when
    ///   `backgroundWaitsWhenMetered` (the `waitOnMeteredNetwork` setting), and while connectivity
    ///   is none (``Hold/offline``), a captive portal (``Hold/captivePortal``) or limited
    ///   (``Hold/limitedConnectivity``): its attempts would fail and burn retries.
    static func hold(
        of transfer: Transfer, network: NetworkConditions, lowPowerMode: Bool, backgroundWaitsWhenMetered: Bool
    ) -> Hold? {
        if network.metered, !transfer.allowsMetered { return .meteredNetwork }
        guard !transfer.isUrgent else { return nil }
        return backgroundHold(
            network: network, lowPowerMode: lowPowerMode, waitsWhenMetered: backgroundWaitsWhenMetered)
    }

    /// Why background transfers (and non-essential asset packs) are held, or nil.
    static func backgroundHold(network: NetworkConditions, lowPowerMode: Bool, waitsWhenMetered: Bool) -> Hold? {
        if lowPowerMode { return .lowPowerMode }
        if network.metered, waitsWhenMetered { return .meteredNetwork }
        return network.connectivity.hold
    }
}

extension WaitingReason {
    /// What a background hold makes a pack or download wait for.
    init(_ hold: NetworkConditions.Hold) { self.init(rawValue: hold.rawValue) }
}
