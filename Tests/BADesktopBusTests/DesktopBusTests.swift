import BADesktopBus
import BATestSupport
import Foundation
import Testing

/// basd's D-Bus layer on real `dbus-daemon`s with stand-ins in Python (``TestBus``): addresses,
/// a signal sent and heard, properties followed through changes and restarts of their service,
/// and no bus at all. One test at a time: each `dbus-daemon` takes one of the user's inotify
/// instances.
@Suite(
    "Desktop bus", .serialized, .timeLimit(.minutes(2)),
    .enabled(if: TestBus.available, Comment(rawValue: TestBus.unavailableReason ?? "")))
struct DesktopBusTests {
    @Test(
        "where the buses are",
        arguments: [
            (["DBUS_SESSION_BUS_ADDRESS": "unix:path=/a"], true, "unix:path=/a"),
            (["DBUS_SESSION_BUS_ADDRESS": "", "XDG_RUNTIME_DIR": "/run/user/7"], true, "unix:path=/run/user/7/bus"),
            (["XDG_RUNTIME_DIR": "/run/user/7"], false, nil),
            ([:], true, nil),
        ] as [([String: String], Bool, String?)])
    func sessionAddress(environment: [String: String], socketExists: Bool, expected: String?) {
        #expect(BusAddress.session(environment) { _ in socketExists } == expected)
    }

    @Test("the system bus: $DBUS_SYSTEM_BUS_ADDRESS, else the default socket")
    func systemAddress() {
        #expect(BusAddress.system(["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/b"]) == "unix:path=/b")
        #expect(BusAddress.system(["DBUS_SYSTEM_BUS_ADDRESS": ""]) == BusAddress.defaultSystem)
        #expect(BusAddress.system([:]) == "unix:path=/run/dbus/system_bus_socket")
    }

    @Test("no bus at the address: a clear error naming it")
    func noBus() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let address = "unix:path=\(directory.path)/missing"
        #expect {
            _ = try DesktopBus.connect(.session, address: address) { _ in }
        } throws: { error in
            "\(error)".contains("connecting to the session bus at \(address)")
                && "\(error)".contains("No such file or directory")
        }
    }

    @Test("a signal basd sends is heard on the bus, with its arguments")
    func signalHeard() throws {
        let session = try TestBus(.session)
        defer { session.stop() }
        let listener = try session.standIn(BusStandIn.listener(interface: "com.canonical.Unity.LauncherEntry"))
        let bus = try DesktopBus.connect(.session, address: session.address) { _ in }
        defer { bus.close() }
        bus.emitSignal(
            path: "/com/canonical/unity/launcherentry/1", interface: "com.canonical.Unity.LauncherEntry",
            member: "Update",
            arguments: [
                .value(.string("application://org.example.Game.desktop")),
                .dictionary([.init("progress", .double(0.25)), .init("progress-visible", .bool(true))]),
            ])
        try listener.wait("the Update signal", timeout: 30) { !$0.jsonLines.isEmpty }
        let heard = listener.jsonLines[0]
        #expect(heard["path"] as? String == "/com/canonical/unity/launcherentry/1")
        #expect(heard["member"] as? String == "Update")
        let arguments = try #require(heard["args"] as? [Any])
        #expect(arguments.first as? String == "application://org.example.Game.desktop")
        let properties = try #require(arguments.last as? [String: Any])
        #expect(properties["progress"] as? Double == 0.25)
        #expect(properties["progress-visible"] as? Bool == true)
    }

    @Test(
        "properties are read at once, followed through changes, told gone and back with their service, and gone with the bus"
    )
    func propertiesFollowed() throws {
        let system = try TestBus(.system)
        defer { system.stop() }
        let seen = Seen()
        let bus = try DesktopBus.connect(.system, address: system.address) { _ in }
        defer { bus.close() }
        // Not running yet: told gone.
        Self.watchMetered(on: bus, into: seen)
        try seen.wait("told NetworkManager is not running") { $0 == [-1] }

        let manager = try system.standIn(BusStandIn.networkManager(metered: 1))
        try seen.wait("NetworkManager's Metered, read when it came") { $0.last == 1 }
        manager.send(BusStandIn.metered(2))
        try seen.wait("Metered changed to no") { $0.last == 2 }
        manager.kill()
        try seen.wait("NetworkManager gone") { $0.last == -1 }
        _ = try system.standIn(BusStandIn.networkManager(metered: 3))
        try seen.wait("NetworkManager back, guessing metered") { $0.last == 3 }
        // The bus itself goes away: told gone, and the connection ends.
        system.killDaemon()
        try seen.wait("the bus gone") { $0.last == -1 }
        #expect(!bus.isConnected)
    }
}

extension DesktopBusTests {
    /// Follows NetworkManager's `Metered` on `bus`: each value into `seen`, -1 while it is not on the bus.
    static func watchMetered(on bus: DesktopBus, into seen: Seen) {
        bus.watchProperties(
            service: "org.freedesktop.NetworkManager", path: "/org/freedesktop/NetworkManager",
            interface: "org.freedesktop.NetworkManager"
        ) { properties in seen.append(properties?["Metered"]?.unsignedValue.map(Int.init) ?? -1) }
    }

    @Test("the bus daemon restarts: told gone, connected again without the old guid, properties followed anew")
    func reconnects() throws {
        let system = try TestBus(.system)
        defer { system.stop() }
        let seen = Seen()
        let lines = Lines()
        let bus = try DesktopBus.connect(.system, address: system.address) { lines.append($0) }
        defer { bus.close() }
        Self.watchMetered(on: bus, into: seen)
        _ = try system.standIn(BusStandIn.networkManager(metered: 1))
        try seen.wait("NetworkManager's Metered") { $0.last == 1 }

        try system.restartDaemon()
        try seen.wait("the bus gone") { $0.last == -1 }
        // NetworkManager on the new bus: read when basd is back (or when it comes, whichever is later).
        let manager = try system.standIn(BusStandIn.networkManager(metered: 3))
        try seen.wait("NetworkManager read from the new bus") { $0.last == 3 }
        // The match was subscribed again: a change on the new bus is followed.
        manager.send(BusStandIn.metered(2))
        try seen.wait("Metered changed on the new bus") { $0.last == 2 }
        #expect(bus.isConnected)
        #expect(lines.all.contains { $0.contains("went away; basd connects again when it is back") }, "\(lines.all)")
        #expect(
            lines.all.contains { $0.contains("connected to the system bus at unix:path=") && $0.hasSuffix(" again") })
    }

    @Test(
        "an address without its guid",
        arguments: [
            ("unix:path=/run/bus,guid=0123", "unix:path=/run/bus"), ("unix:guid=1,path=/a", "unix:path=/a"),
            ("unix:path=/a", "unix:path=/a"),
            ("unix:path=/a,guid=1;tcp:host=h,guid=2,port=1", "unix:path=/a;tcp:host=h,port=1"),
        ])
    func withoutGUID(address: String, expected: String) {
        #expect(DesktopBus.withoutGUID(address) == expected)
    }
}

/// Log lines handed over from the bus thread.
final class Lines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}

/// Values handed over from the bus thread, waited for with a bound.
final class Seen: @unchecked Sendable {
    private let condition = NSCondition()
    private var values: [Int] = []

    func append(_ value: Int) {
        condition.lock()
        values.append(value)
        condition.broadcast()
        condition.unlock()
    }

    /// Waits (at most `timeout` seconds) until `check` holds for what was seen.
    func wait(_ what: String, timeout: Double = 30, until check: ([Int]) -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !check(values) {
            guard condition.wait(until: deadline) else {
                throw HarnessError("timed out waiting for \(what): saw \(values)")
            }
        }
    }
}
