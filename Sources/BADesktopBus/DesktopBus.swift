internal import CBASystem
internal import CSDBus
import Foundation
import Synchronization

/// One client connection to a D-Bus bus (the user's session bus or the system bus), owned by a
/// thread of its own: sd-bus is not thread-safe, so every call on the connection runs there.
/// Other threads post work (``emitSignal(path:interface:member:arguments:)``,
/// ``watchProperties(service:path:interface:onChange:)``) and wake the thread through a pipe; the
/// thread sleeps in `poll` on the bus's socket and the pipe (and sd-bus's own timeout), so an idle
/// connection costs no wake-ups.
///
/// Handlers (a watched property's change) run on the bus thread: they must hand their work on
/// (basd posts it to its executor) and never block.
///
/// When the bus goes away (its daemon stopped), the thread logs it once and ends; watchers are
/// told the service is gone (nil), and later posts do nothing. basd does not reconnect.
///
/// ```swift
/// let bus = try DesktopBus.connect(.session, address: address, log: log)
/// bus.emitSignal(
///     path: "/com/canonical/unity/launcherentry/1", interface: "com.canonical.Unity.LauncherEntry",
///     member: "Update", arguments: [.value(.string("application://org.example.Game.desktop")),
///         .dictionary([.init("progress", .double(0.5)), .init("progress-visible", .bool(true))])])
/// ```
package final class DesktopBus: Sendable {
    /// Which bus.
    package enum Kind: String, Sendable {
        case session, system
    }

    package let kind: Kind
    /// The D-Bus address connected to.
    package let address: String
    private let shared: Mutex<Shared>
    private let log: @Sendable (String) -> Void

    private struct Shared: ~Copyable {
        /// Work for the bus thread, in order.
        var commands: [@Sendable (Connection) -> Void] = []
        /// The write end of the wake-up pipe; nil once ``close()`` closed it or the thread ended.
        var wake: Int32?
        var ended = false
        /// Called when the bus goes away (not on ``DesktopBus/close()``).
        var lost: [@Sendable () -> Void] = []
    }

    /// Connects to the bus at `address` and starts its thread (named `basd-dbus-KIND`).
    /// - Throws: ``DesktopBusError`` when there is no bus there (no socket, refused) or no pipe.
    package static func connect(
        _ kind: Kind, address: String, log: @escaping @Sendable (String) -> Void
    ) throws(DesktopBusError) -> DesktopBus {
        var bus: OpaquePointer?
        let result = ba_sd_bus_open_address(address, &bus)
        guard result >= 0, let bus else {
            throw DesktopBusError(
                "connecting to the \(kind.rawValue) bus at \(address)", errno: -result,
                message: String(cString: strerror(-result)))
        }
        var pipe: [Int32] = [-1, -1]
        guard ba_sys_pipe_cloexec(&pipe) == 0 else {
            let error = errno
            sd_bus_unref(bus)
            throw DesktopBusError(
                "making the \(kind.rawValue) bus's wake-up pipe", errno: error,
                message: String(cString: strerror(error)))
        }
        _ = fcntl(pipe[1], F_SETFL, O_NONBLOCK)
        _ = fcntl(pipe[0], F_SETFL, O_NONBLOCK)
        let desktopBus = DesktopBus(kind: kind, address: address, wake: pipe[1], log: log)
        let connection = Connection(bus: bus, kind: kind, log: log)
        let woken = pipe[0]
        let thread = Thread { [desktopBus] in desktopBus.run(connection, woken: woken) }
        thread.name = "basd-dbus-\(kind.rawValue)"
        thread.start()
        return desktopBus
    }

    private init(kind: Kind, address: String, wake: Int32, log: @escaping @Sendable (String) -> Void) {
        self.kind = kind
        self.address = address
        self.shared = Mutex(Shared(wake: wake))
        self.log = log
    }

    deinit { close() }

    /// Whether the connection still runs (not closed, the bus not gone).
    package var isConnected: Bool { shared.withLock { !$0.ended && $0.wake != nil } }

    /// Runs `work` on the bus thread; false (and nothing runs) once the connection ended.
    @discardableResult
    func post(_ work: @escaping @Sendable (Connection) -> Void) -> Bool {
        shared.withLock { shared in
            guard !shared.ended, let wake = shared.wake else { return false }
            shared.commands.append(work)
            var byte: UInt8 = 1
            _ = write(wake, &byte, 1)  // Full pipe: the thread is awake already.
            return true
        }
    }

    /// Flushes what was sent and ends the connection and its thread (at once; sends posted
    /// before run first). Later calls do nothing.
    package func close() {
        let wake: Int32? = shared.withLock { shared in
            defer { shared.wake = nil }
            return shared.wake
        }
        if let wake { Glibc.close(wake) }
    }

    /// Sends a signal (no reply); dropped, and logged once per member, when the bus refuses it.
    package func emitSignal(path: String, interface: String, member: String, arguments: [BusArgument]) {
        post { connection in
            connection.emitSignal(path: path, interface: interface, member: member, arguments: arguments)
        }
    }

    /// Calls a method and hands its reply to `reply` on the bus thread; `timeout` bounds the wait.
    package func call(
        destination: String, path: String, interface: String, member: String, arguments: [BusArgument] = [],
        timeout: Duration = .seconds(25), reply: @escaping @Sendable (Result<BusReply, DesktopBusError>) -> Void
    ) {
        let posted = post { connection in
            connection.call(
                destination: destination, path: path, interface: interface, member: member, arguments: arguments,
                timeout: timeout, reply: reply)
        }
        if !posted { reply(.failure(DesktopBusError("calling \(member)", message: "the connection has ended"))) }
    }

    /// Calls `handler` (on the bus thread) if the bus goes away; not on ``close()``.
    func onLoss(_ handler: @escaping @Sendable () -> Void) {
        shared.withLock { $0.lost.append(handler) }
    }

    /// Calls `handler` with each signal matching `rule` (a D-Bus match rule, without a `sender`:
    /// sd-bus cannot check a well-known sender name itself), on the bus thread.
    package func subscribe(_ rule: String, handler: @escaping @Sendable (BusMessage) -> Void) {
        post { connection in connection.addMatch(rule, handler: handler) }
    }

    /// The bus thread: runs the posted work and sd-bus's processing until the pipe's write end is
    /// closed or the bus goes away.
    private func run(_ connection: Connection, woken: Int32) {
        var lost = false
        defer {
            Glibc.close(woken)
            let handlers = shared.withLock { shared in
                shared.ended = true
                if let wake = shared.wake { Glibc.close(wake) }
                shared.wake = nil
                shared.commands.removeAll()  // Not run: the connection has ended.
                return shared.lost
            }
            connection.close()
            if lost { for handler in handlers { handler() } }
        }
        var closing = false
        while true {
            let commands = shared.withLock { shared in
                defer { shared.commands.removeAll() }
                return shared.commands
            }
            for command in commands { command(connection) }
            guard connection.process() else {
                log("the \(kind.rawValue) bus at \(address) went away; basd goes on without it")
                lost = true
                return
            }
            if closing { return }
            var entries = [
                pollfd(fd: connection.fd, events: Int16(truncatingIfNeeded: connection.events), revents: 0),
                pollfd(fd: woken, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&entries, 2, connection.timeoutMilliseconds)
            if ready < 0, errno != EINTR { return }
            if entries[1].revents & Int16(POLLIN) != 0 {
                var buffer = [UInt8](repeating: 0, count: 256)
                while buffer.withUnsafeMutableBytes({ read(woken, $0.baseAddress, $0.count) }) > 0 {}
            }
            if entries[1].revents & Int16(POLLHUP | POLLERR) != 0 {
                // close(): one more turn runs what was posted before it, then the thread ends.
                closing = true
            }
        }
    }
}

/// What a reply to a method call carries, read on the bus thread.
package struct BusReply: Sendable {
    /// The reply's arguments, as far as basd reads them.
    package var arguments: [BusMessage.Argument]
}
