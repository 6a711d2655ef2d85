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
/// When the bus goes away (its daemon stopped or restarted), the thread logs it once, watchers are
/// told the service is gone (nil), and posts do nothing (a call fails at once) until the bus is back:
/// the thread connects again after 0.5 s, then waiting twice as long each time up to a minute (the
/// address without its `guid=`: a restarted daemon has a new one). Once connected again it
/// subscribes every match again, runs the ``onReconnect(_:)`` handlers (watched properties are
/// read again) and logs it.
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
        /// Whether the bus is there (false between its going away and the next connection).
        var connected = true
        /// What each new connection is given again (the matches), in order.
        var registrations: [@Sendable (Connection) -> Void] = []
        /// Called when the bus goes away (not on ``DesktopBus/close()``).
        var lost: [@Sendable () -> Void] = []
        /// Called once connected again after the bus went away.
        var regained: [@Sendable () -> Void] = []
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

    /// Whether the connection runs (not closed, the bus there).
    package var isConnected: Bool { shared.withLock { !$0.ended && $0.connected && $0.wake != nil } }

    /// Runs `work` on the bus thread; false (and nothing runs) while the bus is away or once the
    /// connection was closed. `registration`: given to every later connection too (a match).
    @discardableResult
    func post(registration: Bool = false, _ work: @escaping @Sendable (Connection) -> Void) -> Bool {
        shared.withLock { shared in
            guard !shared.ended, shared.wake != nil else { return false }
            // Under the same lock as the bus thread's reconnection: a registration runs once on
            // each connection, never twice on one.
            if registration { shared.registrations.append(work) }
            guard shared.connected, let wake = shared.wake else { return false }
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

    /// Calls `handler` (on the bus thread) each time the bus goes away; not on ``close()``.
    func onLoss(_ handler: @escaping @Sendable () -> Void) {
        shared.withLock { $0.lost.append(handler) }
    }

    /// Calls `handler` (on the bus thread) each time basd is connected again after the bus went
    /// away, once every match is subscribed again: what was asked of the old bus daemon (an
    /// inhibitor, a property read) is asked again.
    package func onReconnect(_ handler: @escaping @Sendable () -> Void) {
        shared.withLock { $0.regained.append(handler) }
    }

    /// Calls `handler` with each signal matching `rule` (a D-Bus match rule, without a `sender`:
    /// sd-bus cannot check a well-known sender name itself), on the bus thread; on every
    /// connection, also after the bus came back.
    package func subscribe(_ rule: String, handler: @escaping @Sendable (BusMessage) -> Void) {
        post(registration: true) { connection in connection.addMatch(rule, handler: handler) }
    }

    /// The waits before each attempt to connect again: 0.5 s, doubling, at most a minute.
    static func reconnectDelay(attempt: Int) -> Int32 {
        Int32(min(60_000, 500 << min(attempt, 7)))
    }

    /// `address` without its `guid=` (a restarted bus daemon has another): `unix:path=/a,guid=x`
    /// is `unix:path=/a`.
    package static func withoutGUID(_ address: String) -> String {
        address.split(separator: ";").map { transport in
            guard let colon = transport.firstIndex(of: ":") else { return String(transport) }
            let keys = transport[transport.index(after: colon)...].split(separator: ",")
                .filter { !$0.hasPrefix("guid=") }
            return String(transport[...colon]) + keys.joined(separator: ",")
        }.joined(separator: ";")
    }

    /// The bus thread: runs the posted work and sd-bus's processing until the pipe's write end is
    /// closed; when the bus goes away, connects again once it is back.
    private func run(_ connection: Connection, woken: Int32) {
        var connection = connection
        defer {
            Glibc.close(woken)
            shared.withLock { shared in
                shared.ended = true
                if let wake = shared.wake { Glibc.close(wake) }
                shared.wake = nil
                shared.commands.removeAll()  // Not run: the connection has ended.
            }
            connection.close()
        }
        var closing = false
        while true {
            let commands = shared.withLock { shared in
                defer { shared.commands.removeAll() }
                return shared.commands
            }
            for command in commands { command(connection) }
            guard connection.process() else {
                if closing { return }
                log("the \(kind.rawValue) bus at \(address) went away; basd connects again when it is back")
                let lost = shared.withLock { shared in
                    shared.connected = false
                    shared.commands.removeAll()  // For the bus that went away.
                    return shared.lost
                }
                connection.close()
                for handler in lost { handler() }
                guard let next = reconnect(woken: woken) else { return }
                connection = next
                continue
            }
            if closing { return }
            var entries = [
                pollfd(fd: connection.fd, events: Int16(truncatingIfNeeded: connection.events), revents: 0),
                pollfd(fd: woken, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&entries, 2, connection.timeoutMilliseconds)
            if ready < 0, errno != EINTR { return }
            if entries[1].revents & Int16(POLLIN) != 0 { Self.drain(woken) }
            if entries[1].revents & Int16(POLLHUP | POLLERR) != 0 {
                // close(): one more turn runs what was posted before it, then the thread ends.
                closing = true
            }
        }
    }
}

extension DesktopBus {
    /// Waits for the bus to come back, trying to connect with growing waits; the new connection
    /// (its matches subscribed again, the reconnection handlers run), or nil when ``close()`` was
    /// called meanwhile.
    fileprivate func reconnect(woken: Int32) -> Connection? {
        let target = Self.withoutGUID(address)
        var attempt = 0
        while true {
            var entry = pollfd(fd: woken, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, Self.reconnectDelay(attempt: attempt))
            if ready < 0, errno != EINTR { return nil }
            if entry.revents & Int16(POLLHUP | POLLERR) != 0 { return nil }  // close()
            if entry.revents & Int16(POLLIN) != 0 {
                Self.drain(woken)
                continue
            }
            attempt += 1
            var bus: OpaquePointer?
            guard ba_sd_bus_open_address(target, &bus) >= 0, let bus else { continue }
            let connection = Connection(bus: bus, kind: kind, log: log)
            let (registrations, regained) = shared.withLock { shared in
                shared.connected = true
                shared.commands.removeAll()
                return (shared.registrations, shared.regained)
            }
            for registration in registrations { registration(connection) }
            log("connected to the \(kind.rawValue) bus at \(target) again")
            for handler in regained { handler() }
            return connection
        }
    }
}

extension DesktopBus {
    /// Reads the wake-up pipe empty (its bytes only say "look").
    fileprivate static func drain(_ woken: Int32) {
        var buffer = [UInt8](repeating: 0, count: 256)
        while buffer.withUnsafeMutableBytes({ read(woken, $0.baseAddress, $0.count) }) > 0 {}
    }
}

/// What a reply to a method call carries, read on the bus thread.
package struct BusReply: Sendable {
    /// The reply's arguments, as far as basd reads them.
    package var arguments: [BusMessage.Argument]
}
