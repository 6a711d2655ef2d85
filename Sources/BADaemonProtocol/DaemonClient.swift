import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Why a call to basd failed: basd's error reply, or the connection's failure.
package struct DaemonClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// basd's error code (Apple's `BAErrorCode` values, or the 1000 range), or 55 when basd cannot
    /// be reached, 56 when the connection broke.
    package var code: Int
    /// What happened and how to fix it.
    package var message: String

    /// Creates an error.
    package init(code: Int, message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }

    static func unreachable(_ socketPath: String, _ why: String) -> DaemonClientError {
        DaemonClientError(
            code: DaemonErrorCode.callerConnectionNotAccepted.rawValue,
            message: "cannot reach basd at \(socketPath): \(why); is basd running? (start it with `basd`, "
                + "or set BA_SOCKET to its socket)")
    }

    static func broken(_ why: String) -> DaemonClientError {
        DaemonClientError(code: DaemonErrorCode.callerConnectionInvalid.rawValue, message: why)
    }
}

/// A blocking client connection to basd: connect and `hello` in ``init(socketPath:client:onEvent:onClose:)``,
/// then ``call(_:)`` from any thread. A reader thread matches replies to calls and hands pushed
/// events to `onEvent` (on that thread, in order: hand them off rather than block it).
///
/// ```swift
/// let client = try DaemonClient(socketPath: DaemonProtocol.defaultSocketPath(),
///                               client: ClientInfo(role: .cli, pid: getpid()))
/// if case .status(let status) = try client.call(.status) { print(status.activeDownloads) }
/// ```
package final class DaemonClient: @unchecked Sendable {
    /// basd's answer to the handshake.
    package private(set) var welcome: WelcomeInfo
    /// The socket it is connected to.
    package let socketPath: String

    private let fd: Int32
    private let onEvent: @Sendable (DownloadEvent) -> Void
    private let onPackEvent: @Sendable (PackEvent) -> Void
    private let onClose: @Sendable (DaemonClientError) -> Void
    private let lock = NSLock()
    private var nextID: UInt64 = 1
    private var pending: [UInt64: Pending] = [:]
    private var closedError: DaemonClientError?
    private let readerDone = DispatchSemaphore(value: 0)
    private var reader: Thread?

    private final class Pending: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        var result: Result<ServerMessage.Result, DaemonClientError>?
        /// The parts of a long answer so far (``ServerMessage/partialResponse(requestId:result:)``).
        var parts: [ServerMessage.Result] = []
    }

    /// Connects and performs the handshake.
    ///
    /// - Parameters:
    ///   - onEvent: Receives pushed events (after ``call(_:)`` of `subscribeEvents`), on the reader thread.
    ///   - onPackEvent: Receives pushed asset-pack events (CLI observers), on the reader thread.
    ///   - onClose: Called once when the connection ends other than by ``close()`` (basd stopped or
    ///     the stream broke).
    /// - Throws: ``DaemonClientError``: 55 when basd cannot be reached or refuses the handshake.
    package init(
        socketPath: String, client: ClientInfo, onEvent: @escaping @Sendable (DownloadEvent) -> Void = { _ in },
        onPackEvent: @escaping @Sendable (PackEvent) -> Void = { _ in },
        onClose: @escaping @Sendable (DaemonClientError) -> Void = { _ in }
    ) throws(DaemonClientError) {
        self.socketPath = socketPath
        self.onEvent = onEvent
        self.onPackEvent = onPackEvent
        self.onClose = onClose
        self.fd = try Self.connect(socketPath)
        self.welcome = WelcomeInfo(protocolVersion: 0, daemonVersion: "")
        let thread = Thread { [self] in readLoop() }
        thread.name = "ba-daemon-client"
        reader = thread
        thread.start()
        do throws(DaemonClientError) {
            let reply = try call(.hello(protocolVersion: DaemonProtocol.version, client: client))
            guard case .welcome(let welcome) = reply else {
                throw DaemonClientError.broken("basd answered hello with \(reply), not welcome")
            }
            self.welcome = welcome
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    private static func connect(_ path: String) throws(DaemonClientError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else {
            throw .unreachable(path, "the socket path is longer than \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: path.utf8)
            buffer[path.utf8.count] = 0
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .unreachable(path, "socket(): \(String(cString: strerror(errno)))") }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard status == 0 else {
            let code = errno
            Glibc.close(fd)
            throw .unreachable(path, String(cString: strerror(code)))
        }
        return fd
    }

    /// Sends `request` and waits for basd's reply.
    ///
    /// - Returns: The result (never `.error`: that is thrown).
    /// - Throws: ``DaemonClientError`` with basd's code for an error reply, 56 when the connection
    ///   is closed or breaks before the reply.
    @discardableResult
    package func call(_ request: Request) throws(DaemonClientError) -> ServerMessage.Result {
        let slot = Pending()
        let id: UInt64
        lock.lock()
        if let closedError {
            lock.unlock()
            throw closedError
        }
        id = nextID
        nextID += 1
        pending[id] = slot
        let bytes: [UInt8]
        do {
            bytes = try DaemonProtocol.encode(ClientMessage(id: id, request: request))
        } catch {
            pending[id] = nil
            lock.unlock()
            throw DaemonClientError(code: DaemonErrorCode.invalidMessage.rawValue, message: error.message)
        }
        // Written under the lock so concurrent calls never interleave their frames.
        let written = Self.sendAll(fd, bytes)
        lock.unlock()
        if !written {
            shutdownSocket()
        }
        slot.done.wait()
        switch slot.result! {
        case .success(.error(let code, let message)): throw DaemonClientError(code: code, message: message)
        case .success(let result): return result
        case .failure(let error): throw error
        }
    }

    /// Closes the connection; calls in flight fail with 56. `onClose` is not called. May be
    /// called from `onEvent` (then the socket is closed when the reader thread ends).
    package func close() {
        lock.lock()
        let first = !closing
        closing = true
        if closedError == nil { closedError = .broken("the connection to basd was closed") }
        lock.unlock()
        guard first else { return }
        shutdownSocket()
        if Thread.current === reader {
            // From onEvent/onClose, or from deinit once the read loop returned (the last
            // reference released on the reader thread): close now if the loop is over.
            let closeNow = lock.withLock {
                closeOnReaderExit = !readerExited
                return readerExited
            }
            if closeNow { Glibc.close(fd) }
        } else {
            readerDone.wait()
            Glibc.close(fd)
        }
    }

    private var closing = false
    private var closeOnReaderExit = false
    private var readerExited = false

    /// Whether the connection has ended.
    package var isClosed: Bool { lock.withLock { closedError != nil } }

    private func shutdownSocket() { _ = shutdown(fd, Int32(SHUT_RDWR)) }

    private static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            offset += count
        }
        return true
    }

    private func readLoop() {
        var reader = FrameReader()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var failure = DaemonClientError.broken("basd closed the connection")
        reading: while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            reader.append(buffer[0..<count])
            do {
                while let payload = try reader.nextFrame() {
                    switch try DaemonProtocol.decodeServerMessage(payload) {
                    case .event(let event): onEvent(event)
                    case .packEvent(let event): onPackEvent(event)
                    case .response(let id, let result): complete(id, .success(result))
                    case .partialResponse(let id, let result): accumulate(id, result)
                    }
                }
            } catch {
                failure = .broken("basd sent something this client cannot read: \(error.message)")
                break reading
            }
        }
        lock.lock()
        let byClose = closedError != nil
        if !byClose { closedError = failure }
        let waiting = pending
        pending.removeAll()
        let error = closedError!
        lock.unlock()
        for slot in waiting.values {
            slot.result = .failure(error)
            slot.done.signal()
        }
        if !byClose { onClose(failure) }
        let closeNow = lock.withLock {
            readerExited = true
            return closeOnReaderExit
        }
        readerDone.signal()
        if closeNow { Glibc.close(fd) }
    }

    /// A part of a long answer: kept until the last part completes it.
    private func accumulate(_ id: UInt64, _ part: ServerMessage.Result) {
        lock.withLock {
            guard let slot = pending[id] else { return }
            slot.parts.append(part)
        }
    }

    private func complete(_ id: UInt64, _ result: Result<ServerMessage.Result, DaemonClientError>) {
        let slot = lock.withLock { pending.removeValue(forKey: id) }
        guard let slot else { return }
        if case .success(let last) = result, !slot.parts.isEmpty,
            let joined = ServerMessage.Result.joined(slot.parts + [last])
        {
            slot.parts = []
            slot.result = .success(joined)
            slot.done.signal()
            return
        }
        slot.result = result
        slot.done.signal()
    }
}

extension DaemonProtocol {
    /// basd's socket: `$BA_SOCKET`, else `$XDG_RUNTIME_DIR/background-assets/basd.sock`, else
    /// `/tmp/background-assets-UID/basd.sock`.
    package static func defaultSocketPath(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String {
        if let path = environment["BA_SOCKET"], !path.isEmpty { return path }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return runtime + "/background-assets/basd.sock"
        }
        return "/tmp/background-assets-\(getuid())/basd.sock"
    }

    /// basd's state folder: `$BA_STATE_DIR`, else `$XDG_DATA_HOME/background-assets`, else
    /// `~/.local/share/background-assets`.
    package static func defaultStateDirectory(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String {
        if let path = environment["BA_STATE_DIR"], !path.isEmpty { return path }
        if let data = environment["XDG_DATA_HOME"], !data.isEmpty { return data + "/background-assets" }
        return NSHomeDirectory() + "/.local/share/background-assets"
    }
}
