import CBAClient
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A `ba_client_error` of the size this header declares.
func clientError() -> ba_client_error {
    var error = ba_client_error()
    error.struct_size = UInt32(MemoryLayout<ba_client_error>.size)
    return error
}

extension ba_client_error {
    /// The message, for a test's comment.
    var text: String {
        withUnsafeBytes(of: message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}

/// The NUL-terminated text in `buffer`.
func text(of buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The progress calls `ba_client_ensure` made (its context).
final class ProgressLog {
    var calls: [(Int64, Int64)] = []

    static let callback: ba_client_progress_fn = { context, _, present, total in
        guard let context else { return }
        Unmanaged<ProgressLog>.fromOpaque(context).takeUnretainedValue().calls.append((present, total))
    }
}

/// A stand-in for basd on a socket of its own, for what a real basd never sends: it accepts one
/// connection, then for each step reads one request frame or writes bytes, and closes. Its thread
/// ends by itself (every wait is bounded).
final class FakeBasd: @unchecked Sendable {
    enum Step {
        /// Reads one request frame (it is kept in ``requests``).
        case read
        /// Writes these bytes as they are.
        case write([UInt8])
    }

    let path: String
    private let listener: Int32
    private let lock = NSLock()
    private var received: [String] = []
    private let done = DispatchSemaphore(value: 0)

    /// One frame: the 4-byte big-endian length, then `body`.
    static func frame(_ body: String) -> [UInt8] { frame(Array(body.utf8)) }

    static func frame(_ body: [UInt8]) -> [UInt8] {
        let length = UInt32(body.count)
        return [UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)]
            + body
    }

    /// basd's welcome to the hello (request 1), with `container`.
    static func welcome(container: String = "/nonexistent") -> [UInt8] {
        frame(
            #"{"type":"response","id":1,"result":{"type":"welcome","welcome":{"protocolVersion":1,"daemonVersion":"9","appGroupContainer":"\#(container)","extra":{"nested":[1,2.5e3,-7,true,null]}}}}"#
        )
    }

    init(folder: String, steps: [Step]) throws {
        path = folder + "/fake-basd.sock"
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            for (index, byte) in path.utf8.enumerated() where index < bytes.count - 1 { bytes[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(listener, 1) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        let thread = Thread { [self] in
            serve(steps)
            done.signal()
        }
        thread.start()
    }

    /// The request frames read so far.
    var requests: [String] {
        lock.lock()
        defer { lock.unlock() }
        return received
    }

    /// Waits (bounded) for the script to end.
    func finish() {
        _ = done.wait(timeout: .now() + 20)
        close(listener)
    }

    private func serve(_ steps: [Step]) {
        var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, 20_000) == 1 else { return }
        let connection = accept(listener, nil, nil)
        guard connection >= 0 else { return }
        defer { close(connection) }
        for step in steps {
            switch step {
            case .read:
                guard let header = readExactly(connection, 4) else { return }
                let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
                guard length <= 1 << 20, let body = readExactly(connection, length) else { return }
                lock.lock()
                received.append(String(decoding: body, as: UTF8.self))
                lock.unlock()
            case .write(let bytes):
                var offset = 0
                while offset < bytes.count {
                    let sent = bytes[offset...].withUnsafeBytes {
                        send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                    }
                    guard sent > 0 else { return }
                    offset += sent
                }
            }
        }
    }

    private func readExactly(_ descriptor: Int32, _ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 20_000) == 1 else { return nil }
            let got = bytes[offset...].withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard got > 0 else { return nil }
            offset += got
        }
        return bytes
    }
}
