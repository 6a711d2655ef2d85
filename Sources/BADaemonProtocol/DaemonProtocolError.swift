/// Why a frame or a message could not be read or written.
///
/// Never a trap: every malformed input becomes one of these. ``requestId`` is set when the payload
/// was read far enough to know which request it was, so the reply can name it.
package struct DaemonProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    package enum Code: Hashable, Sendable {
        /// The length prefix exceeds ``DaemonProtocol/maximumFrameLength``.
        case frameTooLarge
        /// The length prefix is 0.
        case emptyFrame
        /// The payload is not JSON, or not the JSON of a message.
        case invalidJSON
        /// The message's `type` (or a result's or event's) is unknown.
        case unknownMessage
        /// A `hello` asks for a protocol version outside ``DaemonProtocol/supportedVersions``.
        case unsupportedProtocolVersion
    }

    /// What went wrong.
    package var code: Code
    /// What happened and how to fix it.
    package var message: String
    /// The id of the request it is about, when known.
    package var requestId: UInt64?

    /// Creates an error.
    package init(_ code: Code, _ message: String, requestId: UInt64? = nil) {
        self.code = code
        self.message = message
        self.requestId = requestId
    }

    /// The code of the error reply basd sends for it.
    package var replyCode: DaemonErrorCode {
        switch code {
        case .frameTooLarge, .emptyFrame: .invalidFrame
        case .invalidJSON: .invalidMessage
        case .unknownMessage: .unknownMessage
        case .unsupportedProtocolVersion: .callerConnectionNotAccepted
        }
    }

    package var description: String { message }
}
