import BADaemonProtocol
import NIOCore

/// Cuts the inbound byte stream into frame payloads (``DaemonProtocol`` framing).
///
/// Throws ``DaemonProtocolError`` as soon as a length prefix is 0 or above the 1 MiB cap, before
/// buffering the announced bytes, so a client cannot make basd hold more than one frame's worth.
struct FrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let prefix = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt32.self) else {
            return .needMoreData
        }
        let length = try DaemonProtocol.payloadLength(prefix: prefix)
        guard buffer.readableBytes >= DaemonProtocol.headerLength + length else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: DaemonProtocol.headerLength)
        guard let payload = buffer.readSlice(length: length) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(payload))
        return .continue
    }

    mutating func decodeLast(
        context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
    ) throws
        -> DecodingState
    {
        // A partial frame at EOF is dropped: the client went away mid-message.
        try decode(context: context, buffer: &buffer)
    }
}
