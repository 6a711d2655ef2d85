/// The `code` of an ``ServerMessage/Result/error(code:message:)`` reply.
///
/// Apple's `BAErrorCode` raw values where one fits; the protocol-level failures that Apple's
/// framework has no code for use the 1000 range (a Linux addition, documented in `docs/protocol.md`).
package enum DaemonErrorCode: Int, Sendable, Hashable, CaseIterable, Codable {
    /// `BAErrorCode.callerConnectionNotAccepted`: the `hello` was refused (unsupported protocol
    /// version); basd closes the connection.
    case callerConnectionNotAccepted = 55
    /// `BAErrorCode.callerConnectionInvalid`: a request came before `hello`, or a second `hello`.
    case callerConnectionInvalid = 56
    /// The frame could not be read: its length is 0 or above ``DaemonProtocol/maximumFrameLength``.
    /// basd closes the connection (the stream cannot be resynchronised).
    case invalidFrame = 1000
    /// The payload is not valid JSON for a message. basd closes the connection.
    case invalidMessage = 1001
    /// The message's `type` is not one this protocol version knows. basd closes the connection.
    case unknownMessage = 1002
    /// The request is valid but this basd does not serve it yet.
    case notServed = 1003
    /// basd failed to answer (e.g. its state could not be read); the message says why.
    case internalError = 1004
    /// The app directory cannot be installed: its `Info.plist` is missing or wrong (the message
    /// names the file and the key), or the install/update mode does not fit its registration.
    case invalidApp = 1005
    /// A field of the request has a value basd does not accept (e.g. an unknown download state in
    /// `listDownloads`); the message names the field and the accepted values. The connection stays open.
    case invalidRequest = 1006
}
