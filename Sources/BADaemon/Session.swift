import BADaemonProtocol
import NIOCore

/// One client connection's protocol state, driven on the service queue: the handshake rule
/// (``ConnectionStateMachine``), the request dispatch, and the events pushed to it.
///
/// Replies are produced on the service queue in request order and written with
/// `writeAndFlush` from there, which NIO runs on the channel's loop in the same order.
final class Session: @unchecked Sendable {
    let channel: any Channel
    private let service: DownloadService
    /// Confined to the service queue.
    private var machine = ConnectionStateMachine()
    /// The last event sequence pushed (service queue only).
    var lastSentSequence: Int64 = 0
    /// Whether it asked for events (service queue only).
    var subscribed = false

    init(channel: any Channel, service: DownloadService) {
        self.channel = channel
        self.service = service
    }

    var id: ObjectIdentifier { ObjectIdentifier(self) }

    /// The client, once the handshake is done (service queue only).
    var client: ClientInfo? {
        if case .ready(_, let client) = machine.state { return client }
        return nil
    }

    func log(_ line: String) { service.log(line) }

    func receive(_ message: ClientMessage) {
        service.queue.async { [self] in
            let action = machine.received(message.request)
            switch action {
            case .none:
                break
            case .reply(let result):
                send(.response(requestId: message.id, result: result))
            case .replyAndClose(let result):
                send(.response(requestId: message.id, result: result), thenClose: true)
            case .greet(let version, let client):
                switch service.greet(client, protocolVersion: version) {
                case .success(let welcome):
                    send(.response(requestId: message.id, result: .welcome(welcome)))
                case .failure(let refusal):
                    machine.close()
                    send(.response(requestId: message.id, result: refusal.result), thenClose: true)
                }
            case .status(let version):
                send(.response(requestId: message.id, result: service.status(protocolVersion: version)))
            case .serve(let request, let client):
                // A long request (installApp, simulate) answers later, from the service queue.
                let reply: @Sendable (ServerMessage.Result) -> Void = { [self] result in
                    send(.response(requestId: message.id, result: result))
                }
                if let result = service.serve(request, from: client, session: self, reply: reply) {
                    reply(result)
                }
            }
        }
    }

    /// Input could not be read: reply (when possible) and close.
    func fail(_ error: DaemonProtocolError) {
        service.queue.async { [self] in
            log("closing a connection after bad input: \(error.message)")
            if case .replyAndClose(let result) = machine.failed(error) {
                send(.response(requestId: error.requestId ?? 0, result: result), thenClose: true)
            }
        }
    }

    /// The client closed its sending side: close after the replies already queued.
    func inputClosed() {
        service.queue.async { [self] in
            machine.close()
            channel.close(promise: nil)
        }
    }

    /// The connection closed.
    func closed() {
        service.queue.async { [self] in
            machine.close()
            service.sessionClosed(self)
        }
    }

    /// Writes `message` (any thread; call from the service queue to keep the order).
    func send(_ message: ServerMessage, thenClose: Bool = false) {
        let bytes: [UInt8]
        do {
            bytes = try DaemonProtocol.encode(message)
        } catch {
            log("could not encode a message: \(error.message)")
            channel.close(promise: nil)
            return
        }
        let buffer = channel.allocator.buffer(bytes: bytes)
        let written = channel.writeAndFlush(buffer)
        if thenClose {
            written.whenComplete { [channel] _ in channel.close(promise: nil) }
        }
    }
}
