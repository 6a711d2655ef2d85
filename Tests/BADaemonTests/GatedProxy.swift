import BATestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback TCP proxy in front of a real server that lets through, towards its clients, at most
/// a byte budget the test raises step by step: a transfer through it stops where the test says,
/// however fast or slow the machine, and goes on when the test allows more. Requests go upstream
/// unlimited. Its upstream sockets have small receive buffers, so the server cannot run far ahead
/// of what was let through. ``stop()`` ends every connection and the listener.
final class GatedProxy: @unchecked Sendable {
    let port: Int
    var baseURL: String { "http://127.0.0.1:\(port)" }
    private let upstream: Int
    private let listener: Int32
    private let condition = NSCondition()
    private var budget: Int
    private var sent = 0
    private var stopped = false
    private var sockets: Set<Int32> = []

    /// Bytes let through to clients so far.
    var forwarded: Int { condition.withLock { sent } }

    /// Whether everything the budget allows has been let through: nothing flows until it grows.
    var isHeld: Bool { condition.withLock { sent >= budget } }

    /// Listens on a free loopback port and forwards to `upstreamPort`, letting `budget` bytes
    /// through at first.
    init(upstreamPort: Int, budget: Int) throws {
        upstream = upstreamPort
        self.budget = budget
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw HarnessError("cannot listen: \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Lets through `total` bytes in all (from the start), and wakes the connections waiting.
    func allow(upTo total: Int) {
        condition.withLock {
            budget = max(budget, total)
            condition.broadcast()
        }
    }

    /// Lets everything through from now on.
    func open() { allow(upTo: .max) }

    /// Closes the listener and every connection; the threads end.
    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
            // Under the lock: a socket in the set is not closed yet (``end`` takes it out first).
            for fd in sockets { shutdown(fd, Int32(SHUT_RDWR)) }
        }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func acceptLoop() {
        // `stop()` shuts the listener down before closing it: a blocked accept fails then, and
        // the loop looks at `stopped` before each call (never an accept on a reused number).
        while !condition.withLock({ stopped }) {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                return
            }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            // Small: what the server may send ahead of the budget stays small.
            var size: Int32 = 8 * 1024
            setsockopt(server, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            var address = Self.loopback(port: upstream)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            let accepted: Bool = condition.withLock {
                guard !stopped, connected == 0 else { return false }
                sockets.formUnion([client, server])
                return true
            }
            guard accepted else {
                close(client)
                close(server)
                continue
            }
            let pair = Pair()
            Thread.detachNewThread { [self] in
                pump(from: client, to: server, gated: false)
                end(pair, client, server)
            }
            Thread.detachNewThread { [self] in
                pump(from: server, to: client, gated: true)
                end(pair, client, server)
            }
        }
    }

    /// The two directions of one connection: its sockets are closed once both have ended (never
    /// while the other direction may still use a descriptor number).
    private final class Pair: @unchecked Sendable {
        var running = 2
    }

    private func end(_ pair: Pair, _ client: Int32, _ server: Int32) {
        let last: Bool = condition.withLock {
            pair.running -= 1
            guard pair.running == 0 else { return false }
            sockets.subtract([client, server])
            return true
        }
        if last {
            close(client)
            close(server)
        }
    }

    /// Copies until either side ends; towards the client, within the budget. A direction that
    /// ends shuts both sockets down, which ends the other direction too.
    private func pump(from source: Int32, to target: Int32, gated: Bool) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        loop: while true {
            var allowed = buffer.count
            if gated {
                allowed = condition.withLock {
                    while !stopped && sent >= budget { condition.wait() }
                    return stopped ? 0 : min(buffer.count, budget - sent)
                }
                if allowed == 0 { break }
            }
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, allowed) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            var offset = 0
            while offset < count {
                let written = buffer.withUnsafeBytes {
                    send(target, $0.baseAddress! + offset, count - offset, Int32(MSG_NOSIGNAL))
                }
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { break loop }
                offset += written
            }
            if gated { condition.withLock { sent += count } }
        }
        shutdown(target, Int32(SHUT_RDWR))
        shutdown(source, Int32(SHUT_RDWR))
    }
}
