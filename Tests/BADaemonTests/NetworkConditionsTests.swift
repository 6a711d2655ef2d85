import BADesktopBus
import Testing

@testable import BADaemon

/// Who waits for what: the metered-network, connectivity and Low Power Mode rules as rows.
@Suite("Network conditions")
struct NetworkConditionsTests {
    typealias Hold = NetworkConditions.Hold

    @Test(
        "NetworkManager's Metered and Connectivity",
        arguments: [
            (0, 4, false, NetworkConditions.Connectivity.full), (1, 4, true, .full), (2, 4, false, .full),
            (3, 2, true, .portal), (4, 3, false, .limited), (2, 1, false, .none), (2, 9, false, .unknown),
        ] as [(UInt32, UInt32, Bool, NetworkConditions.Connectivity)])
    func properties(metered: UInt32, connectivity: UInt32, isMetered: Bool, expected: NetworkConditions.Connectivity) {
        let conditions = NetworkConditions(
            properties: ["Metered": .uint32(metered), "Connectivity": .uint32(connectivity)])
        #expect(conditions.metered == isMetered)
        #expect(conditions.connectivity == expected)
        #expect(NetworkConditions(properties: nil) == .unknown)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var urgent: Bool
        var allowsMetered: Bool
        var metered: Bool
        var connectivity: NetworkConditions.Connectivity = .full
        var lowPower = false
        var backgroundWaitsWhenMetered = true
        var expected: Hold?
        var testDescription: String {
            "\(urgent ? "urgent" : "background"), \(allowsMetered ? "allows" : "no") metered, "
                + "\(metered ? "metered" : "unmetered") \(connectivity), lowPower \(lowPower), "
                + "setting \(backgroundWaitsWhenMetered) → \(expected?.rawValue ?? "go")"
        }
    }

    static let rows: [Row] = [
        // Unmetered, full: everything goes.
        Row(urgent: false, allowsMetered: true, metered: false, expected: nil),
        Row(urgent: false, allowsMetered: false, metered: false, expected: nil),
        Row(urgent: true, allowsMetered: false, metered: false, expected: nil),
        // Metered: a request that disallows it waits, urgent or not.
        Row(urgent: true, allowsMetered: false, metered: true, expected: .meteredNetwork),
        Row(
            urgent: false, allowsMetered: false, metered: true, backgroundWaitsWhenMetered: false,
            expected: .meteredNetwork),
        // Metered: urgent ones go; background ones wait by the setting.
        Row(urgent: true, allowsMetered: true, metered: true, expected: nil),
        Row(urgent: false, allowsMetered: true, metered: true, expected: .meteredNetwork),
        Row(urgent: false, allowsMetered: true, metered: true, backgroundWaitsWhenMetered: false, expected: nil),
        // Restricted connectivity: background ones wait (no retries burnt); urgent ones try.
        Row(urgent: false, allowsMetered: true, metered: false, connectivity: .portal, expected: .captivePortal),
        Row(
            urgent: false, allowsMetered: true, metered: false, connectivity: .limited,
            expected: .limitedConnectivity),
        Row(urgent: false, allowsMetered: true, metered: false, connectivity: .none, expected: .offline),
        Row(urgent: false, allowsMetered: true, metered: false, connectivity: .full, expected: nil),
        // Metered says before connectivity (the setting holds it either way); Low Power Mode first.
        Row(urgent: false, allowsMetered: true, metered: true, connectivity: .portal, expected: .meteredNetwork),
        Row(
            urgent: false, allowsMetered: true, metered: false, connectivity: .none, lowPower: true,
            expected: .lowPowerMode),
        Row(urgent: false, allowsMetered: true, metered: false, connectivity: .unknown, expected: nil),
        Row(urgent: true, allowsMetered: true, metered: false, connectivity: .portal, expected: nil),
        // Low Power Mode says first for background ones; never for urgent ones.
        Row(urgent: false, allowsMetered: true, metered: true, lowPower: true, expected: .lowPowerMode),
        Row(urgent: true, allowsMetered: true, metered: false, lowPower: true, expected: nil),
        Row(urgent: false, allowsMetered: false, metered: true, lowPower: true, expected: .meteredNetwork),
    ]

    @Test("who waits", arguments: rows)
    func hold(_ row: Row) {
        let network = NetworkConditions(metered: row.metered, connectivity: row.connectivity)
        let hold = NetworkConditions.hold(
            of: .init(isUrgent: row.urgent, allowsMetered: row.allowsMetered), network: network,
            lowPowerMode: row.lowPower, backgroundWaitsWhenMetered: row.backgroundWaitsWhenMetered)
        #expect(hold == row.expected)
    }

    @Test(
        "the names listings show for connectivity",
        arguments: [
            (NetworkConditions.Connectivity.none, "offline"), (.portal, "captivePortal"),
            (.limited, "limitedConnectivity"), (.full, nil), (.unknown, nil),
        ] as [(NetworkConditions.Connectivity, String?)])
    func connectivityNames(connectivity: NetworkConditions.Connectivity, expected: String?) {
        #expect(connectivity.hold?.rawValue == expected)
        #expect(connectivity.isRestricted == (expected != nil))
    }
}
