import BADaemonProtocol

/// One connection's protocol state, without I/O: the handshake rule and what to do with each request.
struct ConnectionStateMachine {
    enum State: Equatable {
        /// Nothing but `hello` is accepted.
        case awaitingHello
        /// Handshake done at this protocol version.
        case ready(protocolVersion: Int, client: ClientInfo)
        /// The connection is being closed; ignore further input.
        case closed
    }

    /// What the handler must do.
    enum Action: Equatable {
        /// Send this result for the request.
        case reply(ServerMessage.Result)
        /// Send this result, then close the connection.
        case replyAndClose(ServerMessage.Result)
        /// Answer `status` (reads basd's state) at this protocol version.
        case status(protocolVersion: Int)
        /// Answer `hello`: the service accepts the client (welcome) or refuses it (then call ``close()``).
        case greet(protocolVersion: Int, client: ClientInfo)
        /// A request after the handshake, for the service.
        case serve(Request, client: ClientInfo)
        /// Nothing (the connection is closing).
        case none
    }

    private(set) var state: State = .awaitingHello

    mutating func received(_ request: Request) -> Action {
        switch (state, request) {
        case (.closed, _):
            return .none
        case (.awaitingHello, .hello(let version, let client)):
            // The codec already refused unsupported versions; check again so this type stands alone.
            guard DaemonProtocol.supportedVersions.contains(version) else {
                state = .closed
                return .replyAndClose(
                    .error(
                        code: DaemonErrorCode.callerConnectionNotAccepted.rawValue,
                        message: "protocol version \(version) is not supported"))
            }
            state = .ready(protocolVersion: version, client: client)
            return .greet(protocolVersion: version, client: client)
        case (.awaitingHello, _):
            state = .closed
            return .replyAndClose(
                .error(
                    code: DaemonErrorCode.callerConnectionInvalid.rawValue,
                    message: "\"\(request.type)\" before \"hello\": the first request on a connection must be hello"))
        case (.ready, .hello):
            return .reply(
                .error(
                    code: DaemonErrorCode.callerConnectionInvalid.rawValue,
                    message: "a second \"hello\" on one connection; the handshake is already done"))
        case (.ready(let version, _), .status):
            return .status(protocolVersion: version)
        case (.ready(_, let client), _):
            return .serve(request, client: client)
        }
    }

    /// The connection is closing (refused handshake, or closed by the peer): ignore further input.
    mutating func close() { state = .closed }

    /// Input could not be read (bad frame or JSON): reply with this and close.
    mutating func failed(_ error: DaemonProtocolError) -> Action {
        guard state != .closed else { return .none }
        state = .closed
        return .replyAndClose(.error(code: error.replyCode.rawValue, message: error.message))
    }
}
