import BADaemonProtocol
import NIOCore

/// One client connection's protocol state, driven on the executor: the handshake rule
/// (``ConnectionStateMachine``), the request dispatch, and the events pushed to it.
///
/// Replies are produced on the executor in request order and written with
/// `writeAndFlush` from there, which NIO runs on the channel's loop in the same order. A listing
/// goes out page by page (``sendPage(_:requestId:written:)``), so later replies may come between
/// its parts; every part carries its request's id.
final class Session: @unchecked Sendable {
    let channel: any Channel
    private let services: BasdServices
    /// Confined to the executor.
    private var machine = ConnectionStateMachine()
    /// The last event sequence pushed (executor only).
    var lastSentSequence: Int64 = 0
    /// Whether every event of its app recorded so far was sent to it (executor only): then a new
    /// event can go out as it is recorded, without reading the backlog back from the store.
    var caughtUp = false
    /// Whether it asked for events (executor only).
    var subscribed = false
    /// The app whose events it subscribed to (executor only); kept here because the handshake
    /// state is gone once the connection closes.
    var subscribedApp: String?
    /// The app whose pack events it follows (`packs follow`), kept for when it closes.
    var followedPacksOf: String?

    init(channel: any Channel, services: BasdServices) {
        self.channel = channel
        self.services = services
    }

    var id: ObjectIdentifier { ObjectIdentifier(self) }

    /// The client, once the handshake is done (executor only).
    var client: ClientInfo? {
        if case .ready(_, let client) = machine.state { return client }
        return nil
    }

    func log(_ line: String) { services.log(line) }

    func receive(_ message: ClientMessage) {
        services.executor.async { [self] in
            let action = machine.received(message.request)
            switch action {
            case .none:
                break
            case .reply(let result):
                send(.response(requestId: message.id, result: result))
            case .replyAndClose(let result):
                send(.response(requestId: message.id, result: result), thenClose: true)
            case .greet(let version, let client):
                switch services.requests.greet(client, protocolVersion: version) {
                case .success(let welcome):
                    send(.response(requestId: message.id, result: .welcome(welcome)))
                case .failure(let refusal):
                    machine.close()
                    send(.response(requestId: message.id, result: refusal.result), thenClose: true)
                }
            case .status(let version):
                send(.response(requestId: message.id, result: services.status(protocolVersion: version)))
            case .serve(let request, let client):
                // A long request (installApp, simulate) answers later, from the executor.
                let reply: @Sendable (ServerMessage.Result) -> Void = { [self] result in
                    send(.response(requestId: message.id, result: result))
                }
                // A listing answers page by page, each page once the one before is written.
                let page: RequestRouter.PageSender = { [self] result, written in
                    sendPage(result, requestId: message.id, written: written)
                }
                if let result = services.requests.serve(request, from: client, session: self, reply: reply, page: page)
                {
                    reply(result)
                }
            }
        }
    }

    /// Input could not be read: reply (when possible) and close.
    func fail(_ error: DaemonProtocolError) {
        services.executor.async { [self] in
            log("closing a connection after bad input: \(error.message)")
            if case .replyAndClose(let result) = machine.failed(error) {
                send(.response(requestId: error.requestId ?? 0, result: result), thenClose: true)
            }
        }
    }

    /// The client closed its sending side: close after the replies already queued.
    func inputClosed() {
        services.executor.async { [self] in
            machine.close()
            channel.close(promise: nil)
        }
    }

    /// The connection closed.
    func closed() {
        services.executor.async { [self] in
            machine.close()
            services.delivery.sessionClosed(self)
        }
    }

    /// Writes `message` (any thread; call from the executor to keep the order). A long answer goes
    /// out in parts (`ServerMessage.Result.parts`), so no listing is limited by the frame cap.
    func send(_ message: ServerMessage, thenClose: Bool = false) {
        if case .response(let id, let result) = message, result.itemCount > Self.itemsPerTurn,
            services.executor.loop.inEventLoop
        {
            return sendInParts(result.parts(itemsPerPart: Self.itemsPerTurn)[...], requestId: id, thenClose: thenClose)
        }
        let frames: [[UInt8]]
        do {
            if case .response(let id, let result) = message {
                frames = try result.frames(requestId: id)
            } else {
                frames = [try DaemonProtocol.encode(message)]
            }
        } catch {
            log("could not encode a message: \(error.message)")
            channel.close(promise: nil)
            return
        }
        for (index, bytes) in frames.enumerated() {
            write(bytes, thenClose: thenClose && index == frames.count - 1)
        }
        // A long listing allocated tens of MiB that glibc would otherwise keep: hand them back
        // once the parts are written.
        if frames.count > 8 { services.releaseMemorySoon() }
    }

    /// Items of a long answer encoded in one turn of the executor: an install's report encodes
    /// its 1,000 downloads a part with `JSONEncoder` in 20 to 60 ms (release build, two busy
    /// cores; issue 33), a quarter of that keeps a turn near ``TurnSize/defaultTarget``.
    static let itemsPerTurn = 250

    /// Writes an encoded frame (executor): an event for several connections is encoded once
    /// and its bytes written to each (``EventRouter``).
    func send(frame: [UInt8]) { _ = write(frame, thenClose: false) }

    /// Writes a long answer a part per turn of the executor, each once the one before is
    /// written, the last as the response: encoding the report of an install of 10,000 downloads
    /// at once held every other client for a fifth of a second (debug build; issue 19).
    private func sendInParts(_ parts: ArraySlice<ServerMessage.Result>, requestId id: UInt64, thenClose: Bool) {
        guard let first = parts.first else { return }
        guard parts.count > 1 else {
            send(.response(requestId: id, result: first), thenClose: thenClose)
            services.releaseMemorySoon()
            return
        }
        let rest = UncheckedSendable(parts.dropFirst())
        sendPage(first, requestId: id) { [self] written in
            // A closed connection ends the answer; nothing is left to send.
            if written { sendInParts(rest.value, requestId: id, thenClose: thenClose) }
        }
    }

    /// Writes one page of a longer answer to request `id` (executor), every frame `"more": true`;
    /// `written` runs on the executor once the page is written to the socket (true) or could not
    /// be (false: the connection is gone). Waiting for that before reading the next page bounds
    /// what basd holds of a listing to about one page, however slowly the client reads.
    func sendPage(
        _ result: ServerMessage.Result, requestId id: UInt64, written: @escaping @Sendable (Bool) -> Void
    ) {
        let frames: [[UInt8]]
        do {
            frames = try result.frames(requestId: id, last: false)
        } catch {
            log("could not encode a message: \(error.message)")
            channel.close(promise: nil)
            written(false)
            return
        }
        var last: EventLoopFuture<Void>?
        for bytes in frames { last = write(bytes, thenClose: false) }
        guard let last else { return written(true) }
        last.whenComplete { [services] outcome in
            let ok: Bool
            if case .success = outcome { ok = true } else { ok = false }
            // Yielding, not async: a write to a socket with room completes at once, inside the
            // executor's task pass, and an `async` chain of pages would then hold every other
            // connection until the listing ends.
            services.executor.yielding { written(ok) }
        }
    }

    @discardableResult
    private func write(_ bytes: [UInt8], thenClose: Bool) -> EventLoopFuture<Void> {
        let buffer = channel.allocator.buffer(bytes: bytes)
        let written = channel.writeAndFlush(buffer)
        if thenClose {
            written.whenComplete { [channel] _ in channel.close(promise: nil) }
        }
        return written
    }
}
