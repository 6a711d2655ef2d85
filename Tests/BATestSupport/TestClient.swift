import BADaemonProtocol
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking unix-socket client with 5-second send and receive timeouts (every wait is bounded).
package final class TestClient {
    package enum Reply: Equatable {
        case message(ServerMessage)
        case closed
    }

    private let fd: Int32
    private var reader = FrameReader()
    private var nextId: UInt64 = 1

    package init(socketPath: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: errno \(errno)") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8)
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { throw HarnessError("path too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path)
            raw[path.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw HarnessError("connect to \(socketPath): errno \(code)")
        }
    }

    deinit { close(fd) }

    /// Ends the connection now (both directions; the descriptor is closed at deinit): basd sees
    /// the client leave.
    package func hangUp() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// Writes raw bytes; false when the peer already closed (EPIPE/ECONNRESET; no SIGPIPE).
    @discardableResult
    package func sendRaw(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// Half-closes the connection: basd sees end of input.
    package func finishSending() { shutdown(fd, Int32(SHUT_WR)) }

    /// Sends a request and returns its id.
    @discardableResult
    package func send(_ request: Request) throws -> UInt64 {
        let id = nextId
        nextId += 1
        guard sendRaw(try DaemonProtocol.encode(ClientMessage(id: id, request: request))) else {
            throw HarnessError("basd closed the connection")
        }
        return id
    }

    /// The next message, or `.closed` at end of stream (or a reset).
    package func receive() throws -> Reply {
        while true {
            if let payload = try reader.nextFrame() { return .message(try DaemonProtocol.decodeServerMessage(payload)) }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = recv(fd, &chunk, chunk.count, 0)
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { throw HarnessError("no reply within 5 s") }
            if count <= 0 { return .closed }
            reader.append(chunk[0..<count])
        }
    }

    /// Sends a request and returns the result of its response.
    package func call(_ request: Request) throws -> ServerMessage.Result {
        let id = try send(request)
        guard case .message(.response(let replyId, let result)) = try receive() else {
            throw HarnessError("no response to \(request.type)")
        }
        guard replyId == id else { throw HarnessError("response id \(replyId), expected \(id)") }
        return result
    }

    /// `hello` at the current version; throws unless answered with a welcome.
    package func handshake() throws {
        let result = try call(
            .hello(protocolVersion: DaemonProtocol.version, client: ClientInfo(role: .cli, pid: getpid())))
        guard case .welcome = result else { throw HarnessError("hello answered \(result)") }
    }

    /// `status`; throws unless answered with status info.
    package func status() throws -> StatusInfo {
        guard case .status(let info) = try call(.status) else { throw HarnessError("status not answered with status") }
        return info
    }
}
