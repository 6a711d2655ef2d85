import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A failure of ``RawHTTPClient``: the message says which call and why.
struct RawHTTPError: Error, CustomStringConvertible {
    var description: String
}

/// A response as read off the wire.
struct RawResponse {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    /// The first value of `name` (case-insensitive).
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Every value of `name` (case-insensitive).
    func headers(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    var contentLength: Int? { header("content-length").flatMap { Int($0) } }
}

/// A blocking HTTP/1.1 client over one TCP connection to 127.0.0.1, precise where URLSession hides things:
/// exact bytes, keep-alive, pipelining, connections that drop or stall. Every read has a timeout, so a test
/// cannot hang on a broken server.
final class RawHTTPClient {
    private let fd: CInt
    private var buffer: [UInt8] = []
    private var isEOF = false

    /// Connects to `127.0.0.1:port`; each later read waits at most `timeout` for data.
    init(port: Int, timeout: Duration = .seconds(5)) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError(description: "socket: errno \(errno)") }
        var tv = timeval(
            tv_sec: Int(timeout.components.seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let error = errno
            close(fd)
            throw RawHTTPError(description: "connect to 127.0.0.1:\(port): errno \(error)")
        }
        self.fd = fd
    }

    deinit { close(fd) }

    // MARK: Sending

    /// Sends raw bytes (for malformed requests and pipelining).
    func sendRaw(_ text: String) throws {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw RawHTTPError(description: "send: errno \(errno)") }
            sent += n
        }
    }

    /// The text of a request for `path` with the given extra headers.
    static func requestText(_ method: String, _ path: String, headers: [(String, String)] = []) -> String {
        "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers.map { "\($0.0): \($0.1)\r\n" }.joined() + "\r\n"
    }

    /// Sends one request and reads its response.
    func request(_ method: String = "GET", _ path: String, headers: [(String, String)] = []) throws -> RawResponse {
        try sendRaw(Self.requestText(method, path, headers: headers))
        return try readResponse(isHead: method == "HEAD")
    }

    // MARK: Receiving

    /// Reads one complete response framed by `Content-Length` (no body for HEAD, 1xx, 204, 304).
    func readResponse(isHead: Bool = false) throws -> RawResponse {
        var response = try readHead()
        if !isHead, response.status != 204, response.status != 304 {
            guard let length = response.contentLength else {
                throw RawHTTPError(description: "response \(response.status) without Content-Length")
            }
            response.body = try read(count: length)
        }
        return response
    }

    /// Reads the status line and headers; the body stays unread.
    func readHead() throws -> RawResponse {
        let terminator: [UInt8] = Array("\r\n\r\n".utf8)
        var end: Int?
        while true {
            if let found = buffer.firstRange(of: terminator) {
                end = found.upperBound
                break
            }
            guard try fill() else { throw RawHTTPError(description: "connection closed before the end of a head") }
        }
        guard let end else { throw RawHTTPError(description: "no head") }
        let text = String(decoding: buffer[..<(end - 4)], as: UTF8.self)
        buffer.removeFirst(end)
        var lines = text.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            throw RawHTTPError(description: "bad status line in \(text.debugDescription)")
        }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return RawResponse(status: status, headers: headers, body: [])
    }

    /// Reads exactly `count` bytes, or throws if the connection closes or goes quiet first.
    func read(count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else {
                throw RawHTTPError(description: "connection closed after \(buffer.count) of \(count) bytes")
            }
        }
        defer { buffer.removeFirst(count) }
        return Array(buffer[..<count])
    }

    /// Reads a body in chunked transfer coding up to its last chunk (and the empty trailer), returning
    /// its bytes and how many chunks carried them.
    func readChunkedBody() throws -> (body: [UInt8], chunks: Int) {
        var body: [UInt8] = []
        var chunks = 0
        while true {
            let line = try readLine()
            guard let size = Int(line.split(separator: ";")[0].trimmingCharacters(in: .whitespaces), radix: 16) else {
                throw RawHTTPError(description: "bad chunk size line \(line.debugDescription)")
            }
            if size == 0 {
                guard try readLine().isEmpty else { throw RawHTTPError(description: "a trailer after the last chunk") }
                return (body, chunks)
            }
            body += try read(count: size)
            chunks += 1
            guard try readLine().isEmpty else { throw RawHTTPError(description: "no CRLF after a chunk's data") }
        }
    }

    /// Reads one CRLF-terminated line (without the CRLF).
    private func readLine() throws -> String {
        let crlf: [UInt8] = [13, 10]
        while true {
            if let end = buffer.firstRange(of: crlf)?.lowerBound {
                defer { buffer.removeFirst(end + 2) }
                return String(decoding: buffer[..<end], as: UTF8.self)
            }
            guard try fill() else { throw RawHTTPError(description: "connection closed in the middle of a line") }
        }
    }

    /// Reads until the server closes the connection and returns everything not yet consumed.
    func readToEnd() throws -> [UInt8] {
        while try fill() {}
        defer { buffer.removeAll() }
        return buffer
    }

    /// Whether the server sends nothing (and keeps the connection open) for `duration`: waits with `poll`.
    func staysSilent(for duration: Duration) -> Bool {
        guard buffer.isEmpty else { return false }
        var pollfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(
            duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        return poll(&pollfd, 1, milliseconds) == 0
    }

    /// Reads more bytes into the buffer; `false` at end of stream.
    private func fill() throws -> Bool {
        if isEOF { return false }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffer.append(contentsOf: chunk[..<n])
                return true
            }
            if n == 0 {
                isEOF = true
                return false
            }
            switch errno {
            case EINTR: continue
            case ECONNRESET:
                isEOF = true
                return false
            case EAGAIN: throw RawHTTPError(description: "read timed out")
            default: throw RawHTTPError(description: "recv: errno \(errno)")
            }
        }
    }
}
