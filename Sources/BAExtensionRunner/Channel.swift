import BACore
import BAExtensionABI
internal import CBASystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The runner's end of the protocol socket. Writes are serialized (host functions may be called
/// from any thread) and buffered: returned downloads go out in batches, everything else at once.
final class Channel: Sendable {
    private let fd: Int32
    private let pending = Mutex(ByteWriter())
    private static let batchBytes = 64 * 1024

    init(fd: Int32) { self.fd = fd }

    /// Queues a message; `flush` also sends everything queued, in order.
    func send(_ message: RunnerMessage, flush: Bool = true) {
        send(flush: flush) {
            message.encode(into: &$0)
            return true
        }
    }

    /// Queues one frame whose payload `body` writes straight into the buffer (dropped if `body`
    /// returns false).
    func send(flush: Bool, _ body: (inout ByteWriter) -> Bool) {
        pending.withLock { writer in
            Frame.append(to: &writer, body)
            if flush || writer.count >= Self.batchBytes {
                // A write error means the host is gone; it will kill us, so there is nobody to tell.
                _ = writer.bytes.withUnsafeBytes { ba_sys_write_all(fd, $0.baseAddress, $0.count) }
                writer.removeAll()
            }
        }
    }

    /// Blocks until one whole frame arrives; nil on end of stream or a read error.
    func receive(decoder: inout FrameDecoder) throws(WireError) -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if let frame = try decoder.next() { return frame }
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            decoder.append(chunk[0..<count])
        }
    }
}
