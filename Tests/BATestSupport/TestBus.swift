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
    /// The bus's D-Bus address (`unix:path=…,guid=…`; a restarted daemon's has another guid).
    package var address: String { lock.withLock { daemon.stdoutLines[0] } }
    private var daemon: ChildProcess
    /// `dbus-daemon`'s configuration file.
    private let config: String
    private var standIns: [ChildProcess] = []
    private let lock = NSLock()

    /// Starts `dbus-daemon` on a socket in a new temporary folder and waits for its address.
    package init(_ kind: Kind) throws {
        self.kind = kind
        directory = try TemporaryDirectory()
        let socket = directory.path + "/\(kind.rawValue)_bus_socket"
        config = try directory.write(
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
        do {
            daemon = try Self.startDaemon(config: config)
        } catch {
            directory.remove()
            throw error
        }
    }

    private static func startDaemon(config: String) throws -> ChildProcess {
        let daemon = try ChildProcess(dbusDaemon, ["--config-file=\(config)", "--print-address=1", "--nofork"])
        do {
            try daemon.wait("dbus-daemon's address", timeout: 20) { !$0.stdoutLines.isEmpty }
        } catch {
            daemon.kill()
            throw error
        }
        return daemon
    }

    /// Stops `dbus-daemon` and starts another on the same socket (a new `guid`, as after a
    /// restart): clients lose the bus, and may connect again to ``address`` without its guid.
    package func restartDaemon() throws {
        let old = lock.withLock { daemon }
        old.kill()
        _ = old.waitForExit(timeout: 20)
        let socket = directory.path + "/\(kind.rawValue)_bus_socket"
        unlink(socket)
        let new = try Self.startDaemon(config: config)
        lock.withLock { daemon = new }
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
    package func killDaemon() { lock.withLock { daemon }.kill() }

    /// Stops the stand-ins and the bus, and removes the folder.
    package func stop() {
        for child in lock.withLock({ standIns }) { child.kill() }
        lock.withLock { daemon }.kill()
        directory.remove()
    }
}
