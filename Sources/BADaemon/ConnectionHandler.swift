import BADaemonProtocol
import NIOCore

/// Speaks the protocol on one connection: decodes each frame's JSON, runs the
/// ``ConnectionStateMachine`` and writes the replies. Malformed input gets an error reply (when
/// there is something to reply to) and a close; other connections are not affected.
final class ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var machine = ConnectionStateMachine()
    private let context: DaemonContext

    init(context: DaemonContext) {
        self.context = context
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let payload = Self.unwrapInboundIn(data)
        do {
            let message = try DaemonProtocol.decodeClientMessage(payload.readableBytesView)
            perform(machine.received(message.request), id: message.id, context: context)
        } catch {
            perform(machine.failed(error), id: error.requestId ?? 0, context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? DaemonProtocolError {
            self.context.log("closing a connection after a bad frame: \(error.message)")
            perform(machine.failed(error), id: error.requestId ?? 0, context: context)
        } else {
            self.context.log("closing a connection after an error: \(error)")
            context.close(promise: nil)
        }
    }

    private func perform(_ action: ConnectionStateMachine.Action, id: UInt64, context: ChannelHandlerContext) {
        switch action {
        case .none:
            break
        case .reply(let result):
            write(.response(requestId: id, result: result), context: context, thenClose: false)
        case .replyAndClose(let result):
            write(.response(requestId: id, result: result), context: context, thenClose: true)
        case .greet(let version, _):
            write(
                .response(
                    requestId: id,
                    result: .welcome(WelcomeInfo(protocolVersion: version, daemonVersion: self.context.daemonVersion))),
                context: context, thenClose: false)
        case .status(let version):
            write(
                .response(requestId: id, result: self.context.status(protocolVersion: version)), context: context,
                thenClose: false)
        }
    }

    private func write(_ message: ServerMessage, context: ChannelHandlerContext, thenClose: Bool) {
        let bytes: [UInt8]
        do {
            bytes = try DaemonProtocol.encode(message)
        } catch {
            self.context.log("could not encode a reply: \(error.message)")
            context.close(promise: nil)
            return
        }
        let buffer = context.channel.allocator.buffer(bytes: bytes)
        if thenClose {
            context.writeAndFlush(Self.wrapOutboundOut(buffer)).whenComplete { [channel = context.channel] _ in
                channel.close(promise: nil)
            }
        } else {
            context.writeAndFlush(Self.wrapOutboundOut(buffer), promise: nil)
        }
    }
}
