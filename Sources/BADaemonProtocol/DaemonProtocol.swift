/// The wire protocol between basd and its clients (an app's `BADownloadManager`, `ba` commands).
///
/// Every message is a frame: a 4-byte big-endian payload length, then that many bytes of UTF-8
/// JSON. A client sends ``ClientMessage``s and basd answers each with one
/// ``ServerMessage/response(requestId:result:)`` carrying the same id; basd may also push
/// ``ServerMessage/event(_:)``s at any time after the handshake. The first request on a
/// connection must be ``Request/hello(protocolVersion:client:)``. `docs/protocol.md` is the contract.
///
/// ```swift
/// var reader = FrameReader()
/// let frame = try DaemonProtocol.encode(ClientMessage(id: 1, request: .hello(
///     protocolVersion: DaemonProtocol.version, client: ClientInfo(role: .cli, pid: 42))))
/// // … write frame to the socket, read bytes into reader …
/// if let payload = try reader.nextFrame() { let reply = try DaemonProtocol.decodeServerMessage(payload) }
/// ```
package enum DaemonProtocol {
    /// The protocol version this build speaks. A change that an older peer would misread bumps it.
    package static let version = 1
    /// The versions basd accepts in `hello`.
    package static let supportedVersions: ClosedRange<Int> = 1...1
    /// The largest payload a frame may carry (1 MiB), not counting the 4-byte length prefix.
    package static let maximumFrameLength = 1 << 20
    /// The size of the length prefix.
    package static let headerLength = 4

    /// How often `basd.timer` (written by `ba service install`) starts basd when it is not
    /// running: a basd that exits when idle stays for anything due sooner (docs/operations.md).
    package static let wakeTimerSeconds = 900
    /// How long the basd `ba service install` runs (`--exit-when-idle`) stays idle before it exits.
    package static let idleExitSeconds = 300
}
