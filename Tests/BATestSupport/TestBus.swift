import Foundation

/// A private D-Bus bus for a test: a real `dbus-daemon` on a socket in a temporary folder, with a
/// policy that lets anyone own any name (so stand-ins can be NetworkManager or logind), and
/// stand-ins for the desktop's services written in Python (``BusStandIn``). Stop it with
/// ``stop()`` (in a `defer`).
///
/// ```swift
/// let system = try TestBus(.system)
/// defer { system.stop() }
/// let networkManager = try system.standIn(BusStandIn.networkManager(metered: 1))
/// ```
package final class TestBus: @unchecked Sendable {
    package enum Kind: String, Sendable {
        case session, system
    }

    /// Why these tests cannot run here (no `dbus-daemon`, no Debian python3 with python3-dbus and
    /// python3-gi), or nil when they can.
    package static let unavailableReason: String? = {
        guard FileManager.default.isExecutableFile(atPath: dbusDaemon) else {
            return "no \(dbusDaemon) (Debian's dbus-daemon package)"
        }
        guard FileManager.default.isExecutableFile(atPath: python) else { return "no \(python)" }
        guard let check = try? runProcessBlocking(python, ["-c", "import dbus, dbus.service, dbus.mainloop.glib, gi"]),
            check.status == 0
        else {
            return "\(python) cannot import dbus and gi (Debian's python3-dbus and python3-gi packages)"
        }
        return nil
    }()

    /// Whether these tests can run here.
    package static var available: Bool { unavailableReason == nil }

    static let dbusDaemon = "/usr/bin/dbus-daemon"
    /// Debian's python3, which has python3-dbus (another python3 on the PATH may not).
    static let python = "/usr/bin/python3"

    package let kind: Kind
    package let directory: TemporaryDirectory
    /// The bus's D-Bus address (`unix:path=…`).
    package let address: String
    private let daemon: ChildProcess
    private var standIns: [ChildProcess] = []
    private let lock = NSLock()

    /// Starts `dbus-daemon` on a socket in a new temporary folder and waits for its address.
    package init(_ kind: Kind) throws {
        self.kind = kind
        directory = try TemporaryDirectory()
        let socket = directory.path + "/\(kind.rawValue)_bus_socket"
        let config = try directory.write(
            "\(kind.rawValue).conf",
            """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>\(kind.rawValue)</type>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """)
        daemon = try ChildProcess(Self.dbusDaemon, ["--config-file=\(config)", "--print-address=1", "--nofork"])
        do {
            try daemon.wait("dbus-daemon's address", timeout: 20) { !$0.stdoutLines.isEmpty }
        } catch {
            daemon.kill()
            directory.remove()
            throw error
        }
        address = daemon.stdoutLines[0]
    }

    /// The environment that points a process at this bus.
    package var environment: [String: String] {
        [kind == .session ? "DBUS_SESSION_BUS_ADDRESS" : "DBUS_SYSTEM_BUS_ADDRESS": address]
    }

    /// Starts a stand-in on this bus and waits until it owns its names (it prints `ready`).
    package func standIn(_ arguments: [String]) throws -> ChildProcess {
        let script = try directory.write("standin.py", BusStandIn.script)
        let child = try ChildProcess(Self.python, ["-u", script, address] + arguments, input: .pipe)
        lock.withLock { standIns.append(child) }
        try child.wait("the stand-in to be ready", timeout: 30) { $0.stdoutLines.contains("ready") }
        return child
    }

    /// Kills `dbus-daemon` alone: the bus goes away under its clients.
    package func killDaemon() { daemon.kill() }

    /// Stops the stand-ins and the bus, and removes the folder.
    package func stop() {
        for child in lock.withLock({ standIns }) { child.kill() }
        daemon.kill()
        directory.remove()
    }
}
