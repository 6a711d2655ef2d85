import BADaemonProtocol
import NIOCore

/// The socket side of one connection: cuts frames (``FrameDecoder``), decodes their JSON and hands
/// each message, in order, to the connection's ``Session`` on the service queue. Everything the
/// protocol decides happens there; this handler only moves bytes.
final class ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let session: Session
    private var failed = false

    init(session: Session) {
        self.session = session
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let payload = Self.unwrapInboundIn(data)
        do {
            let message = try DaemonProtocol.decodeClientMessage(payload.readableBytesView)
            session.receive(message)
        } catch {
            failed = true
            session.fail(error)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !failed else { return }
        failed = true
        if let error = error as? DaemonProtocolError {
            session.fail(error)
        } else {
            session.log("closing a connection after an error: \(error)")
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            // The client is done sending: close once the replies queued before now are written.
            session.inputClosed()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        session.closed()
        context.fireChannelInactive()
    }
}
