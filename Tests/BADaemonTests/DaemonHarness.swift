import BADaemonProtocol
import BATestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Bytes behind a lock.
final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func withLock<T>(_ body: (inout Data) -> T) -> T { lock.withLock { body(&data) } }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A real `basd` process with a temporary state folder and socket, and its own settings
/// (``TestSettings``: `XDG_CONFIG_HOME` in the temporary folder, `allowedHosts` loopback). Killed
/// with SIGKILL by ``kill()`` (call it in a `defer`) if it is still running.
final class DaemonProcess: @unchecked Sendable {
    let directory: TemporaryDirectory
    let stateDirectory: String
    let socketPath: String
    let process = Process()
    private let exited = DispatchSemaphore(value: 0)
    private let stdout = Pipe()
    private let stderr = Pipe()

    /// Starts basd and returns once it printed its listening line (at most `timeout` seconds).
    /// With `descriptorLimit`, basd runs under `ulimit -n` of that many.
    init(
        directory: TemporaryDirectory? = nil, environment: [String: String] = [:], timeout: Double = 20,
        descriptorLimit: Int? = nil
    ) throws {
        self.directory = try directory ?? TemporaryDirectory()
        stateDirectory = self.directory.path + "/state"
        socketPath = self.directory.path + "/run/basd.sock"
        let basd = BuildProducts.executable("basd")
        if let descriptorLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = [
                "-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\"", basd, "--state-dir", stateDirectory,
                "--socket", socketPath,
            ]
        } else {
            process.executableURL = URL(fileURLWithPath: basd)
            process.arguments = ["--state-dir", stateDirectory, "--socket", socketPath]
        }
        // Its own settings folder (never the developer's), downloads to loopback only.
        let environment = try TestSettings.prepare(stateDirectory: stateDirectory, environment: environment)
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = stdout
        process.standardError = stderr
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        let line = try readLine(timeout: timeout)
        guard line == "basd listening on \(socketPath)" else {
            kill()
            throw HarnessError("basd printed \(line.debugDescription), not its listening line")
        }
        // Drain basd's log so a chatty basd never blocks on a full pipe; kept for failure messages.
        let handle = stderr.fileHandleForReading
        let log = logBuffer
        let thread = Thread {
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                log.withLock { $0.append(data) }
            }
        }
        thread.start()
    }

    /// Starts basd as ``init(directory:environment:timeout:descriptorLimit:)`` does, waiting for
    /// its listening line on a thread of its own rather than on the concurrency pool.
    static func start(
        directory: TemporaryDirectory? = nil, environment: [String: String] = [:], timeout: Double = 20,
        descriptorLimit: Int? = nil
    ) async throws -> DaemonProcess {
        try await offThePool {
            try DaemonProcess(
                directory: directory, environment: environment, timeout: timeout, descriptorLimit: descriptorLimit)
        }
    }

    private let logBuffer = LockedData()

    /// What basd wrote to standard error so far (after its listening line).
    var standardError: String { logBuffer.withLock { String(decoding: $0, as: UTF8.self) } }

    /// Reads stdout up to the first newline, polling with a deadline (never blocks past it).
    private func readLine(timeout: Double) throws -> String {
        let fd = stdout.fileHandleForReading.fileDescriptor
        let deadline = Date().addingTimeInterval(timeout)
        var bytes: [UInt8] = []
        while !bytes.contains(UInt8(ascii: "\n")) {
            let left = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
            guard left > 0 else { throw HarnessError("basd printed no listening line in \(timeout) s") }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, left) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 256)
            let count = read(fd, &chunk, chunk.count)
            guard count > 0 else {
                throw HarnessError("basd closed stdout before listening: \(standardErrorIfExited())")
            }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }

    private func standardErrorIfExited() -> String {
        guard waitForExit(timeout: 5) != nil else { return "(still running)" }
        return String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    /// Sends `signal` to basd.
    func send(_ signal: Int32) { Glibc.kill(process.processIdentifier, signal) }

    /// Waits for basd to exit; its status, or nil after `timeout` seconds.
    func waitForExit(timeout: Double) -> Int32? {
        guard exited.wait(timeout: .now() + timeout) == .success else { return nil }
        exited.signal()  // later waits see it too
        return process.terminationStatus
    }

    /// SIGKILLs basd if it still runs, and removes the temporary folder.
    func kill() {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        _ = waitForExit(timeout: 10)
        directory.remove()
    }
}

/// Runs `basd` to completion (for the ones expected to exit by themselves), bounded by a SIGKILL.
func runDaemonToExit(
    stateDirectory: String, socketPath: String, timeout: Double = 20
) throws -> (
    status: Int32, stdout: String, stderr: String
) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: BuildProducts.executable("basd"))
    process.arguments = ["--state-dir", stateDirectory, "--socket", socketPath]
    process.environment = ProcessInfo.processInfo.environment.merging(
        try TestSettings.prepare(stateDirectory: stateDirectory)
    ) { $1 }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    let exited = DispatchSemaphore(value: 0)
    process.terminationHandler = { _ in exited.signal() }
    try process.run()
    if exited.wait(timeout: .now() + timeout) != .success {
        kill(process.processIdentifier, SIGKILL)
        _ = exited.wait(timeout: .now() + 10)
        throw HarnessError("basd did not exit within \(timeout) s")
    }
    return (
        status: process.terminationStatus,
        stdout: String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
        stderr: String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    )
}

/// A blocking unix-socket client with 5-second send and receive timeouts (every wait is bounded).
final class TestClient {
    enum Reply: Equatable {
        case message(ServerMessage)
        case closed
    }

    private let fd: Int32
    private var reader = FrameReader()
    private var nextId: UInt64 = 1

    init(socketPath: String) throws {
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

    /// Writes raw bytes; false when the peer already closed (EPIPE/ECONNRESET; no SIGPIPE).
    @discardableResult
    func sendRaw(_ bytes: [UInt8]) -> Bool {
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
    func finishSending() { shutdown(fd, Int32(SHUT_WR)) }

    /// Sends a request and returns its id.
    @discardableResult
    func send(_ request: Request) throws -> UInt64 {
        let id = nextId
        nextId += 1
        guard sendRaw(try DaemonProtocol.encode(ClientMessage(id: id, request: request))) else {
            throw HarnessError("basd closed the connection")
        }
        return id
    }

    /// The next message, or `.closed` at end of stream (or a reset).
    func receive() throws -> Reply {
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
    func call(_ request: Request) throws -> ServerMessage.Result {
        let id = try send(request)
        guard case .message(.response(let replyId, let result)) = try receive() else {
            throw HarnessError("no response to \(request.type)")
        }
        guard replyId == id else { throw HarnessError("response id \(replyId), expected \(id)") }
        return result
    }

    /// `hello` at the current version; throws unless answered with a welcome.
    func handshake() throws {
        let result = try call(
            .hello(protocolVersion: DaemonProtocol.version, client: ClientInfo(role: .cli, pid: getpid())))
        guard case .welcome = result else { throw HarnessError("hello answered \(result)") }
    }

    /// `status`; throws unless answered with status info.
    func status() throws -> StatusInfo {
        guard case .status(let info) = try call(.status) else { throw HarnessError("status not answered with status") }
        return info
    }
}

/// A deterministic generator for fuzzing (SplitMix64).
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
