import Foundation

extension DaemonProtocol {
    /// Encodes `message` as one frame: the 4-byte big-endian length, then the JSON.
    /// - Throws: ``DaemonProtocolError`` `.frameTooLarge` when the JSON exceeds
    ///   ``maximumFrameLength`` (e.g. a huge `currentDownloads` answer), `.invalidJSON` when it
    ///   cannot be encoded (a non-finite Double).
    package static func encode(_ message: some Encodable) throws(DaemonProtocolError) -> [UInt8] {
        let payload: [UInt8]
        if let server = message as? ServerMessage, let written = MessageWriter.writeServerMessage(server) {
            payload = written
        } else if let client = message as? ClientMessage, let written = MessageWriter.writeClientMessage(client) {
            payload = written
        } else {
            payload = try encodeWithFoundation(message)
        }
        guard payload.count <= maximumFrameLength else {
            throw DaemonProtocolError(
                .frameTooLarge, "the message is \(payload.count) bytes, above the \(maximumFrameLength)-byte limit")
        }
        let length = UInt32(payload.count)
        var frame: [UInt8] = [
            UInt8(length >> 24), UInt8((length >> 16) & 0xff), UInt8((length >> 8) & 0xff), UInt8(length & 0xff),
        ]
        frame.reserveCapacity(headerLength + payload.count)
        frame.append(contentsOf: payload)
        return frame
    }

    /// `message` as `JSONEncoder` writes it, keys sorted (what ``MessageWriter`` matches).
    package static func encodeWithFoundation(_ message: some Encodable) throws(DaemonProtocolError) -> [UInt8] {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return Array(try encoder.encode(message))
        } catch {
            throw DaemonProtocolError(.invalidJSON, "the message could not be encoded as JSON: \(error)")
        }
    }

    /// Checks a frame's length prefix (the first 4 bytes, big-endian) and returns the payload length.
    /// - Throws: `.emptyFrame` for 0, `.frameTooLarge` above ``maximumFrameLength``.
    package static func payloadLength(prefix: UInt32) throws(DaemonProtocolError) -> Int {
        guard prefix != 0 else {
            throw DaemonProtocolError(.emptyFrame, "a frame's length prefix is 0; every frame carries a JSON message")
        }
        guard prefix <= UInt32(maximumFrameLength) else {
            throw DaemonProtocolError(
                .frameTooLarge, "a frame announces \(prefix) bytes, above the \(maximumFrameLength)-byte limit")
        }
        return Int(prefix)
    }

    /// Decodes a client's payload (a frame without its prefix).
    /// - Throws: `.invalidJSON`, `.unknownMessage`, or `.unsupportedProtocolVersion` for a `hello`
    ///   outside ``supportedVersions`` (with the request id when it could be read).
    package static func decodeClientMessage(
        _ payload: some Collection<UInt8>
    ) throws(DaemonProtocolError)
        -> ClientMessage
    {
        // The frequent requests without JSONDecoder; it reads the others, and makes every error.
        let message: ClientMessage
        if let read = MessageReader.readClientMessage(payload) {
            message = read
        } else {
            message = try decode(payload)
        }
        if case .hello(let version, _) = message.request, !supportedVersions.contains(version) {
            throw DaemonProtocolError(
                .unsupportedProtocolVersion,
                "protocol version \(version) is not supported; this basd speaks \(supportedVersions.lowerBound)"
                    + (supportedVersions.count > 1 ? " to \(supportedVersions.upperBound)" : "")
                    + ": update the client or basd so they match",
                requestId: message.id)
        }
        return message
    }

    /// Decodes basd's payload (a frame without its prefix).
    /// - Throws: `.invalidJSON` or `.unknownMessage`.
    package static func decodeServerMessage(
        _ payload: some Collection<UInt8>
    ) throws(DaemonProtocolError)
        -> ServerMessage
    {
        // Events, `ok` and download lists without JSONDecoder; it reads the others, and makes every error.
        if let read = MessageReader.readServerMessage(payload) { return read }
        return try decode(payload)
    }

    private static func decode<Message: Decodable>(
        _ payload: some Collection<UInt8>
    ) throws(DaemonProtocolError)
        -> Message
    {
        guard !payload.isEmpty else { throw DaemonProtocolError(.emptyFrame, "the frame is empty") }
        let data = Data(payload)
        do {
            return try JSONDecoder().decode(Message.self, from: data)
        } catch let unknown as UnknownMessageType {
            throw DaemonProtocolError(
                .unknownMessage, "unknown message type \"\(unknown.type)\" (protocol version \(version))",
                requestId: unknown.id)
        } catch {
            throw DaemonProtocolError(
                .invalidJSON, "the message is not valid JSON for this protocol: \(Self.describe(error))",
                requestId: try? JSONDecoder().decode(RequestID.self, from: data).id)
        }
    }

    /// A short reason for a decoding error (the full one repeats the coding path at length).
    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "missing key \"\(key.stringValue)\""
        case DecodingError.typeMismatch(let type, let context):
            "wrong type at \(path(context)), expected \(type)"
        case DecodingError.valueNotFound(let type, let context): "missing \(type) at \(path(context))"
        case DecodingError.dataCorrupted(let context): "\(context.debugDescription) (at \(path(context)))"
        default: "\(error)"
        }
    }

    private static func path(_ context: DecodingError.Context) -> String {
        context.codingPath.isEmpty ? "the top level" : context.codingPath.map(\.stringValue).joined(separator: ".")
    }

    private struct RequestID: Decodable { var id: UInt64 }
}

/// Cuts a byte stream into frame payloads: feed it what the socket gave, take frames out.
///
/// ```swift
/// var reader = FrameReader()
/// reader.append(bytesFromSocket)
/// while let payload = try reader.nextFrame() { … }
/// ```
/// After it throws, the stream is out of sync: close the connection.
package struct FrameReader: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0

    /// Creates an empty reader.
    package init() {}

    /// Bytes received but not yet returned as frames.
    package var bufferedCount: Int { buffer.count - start }

    /// Adds received bytes.
    package mutating func append(_ bytes: some Sequence<UInt8>) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete frame's payload, or nil when more bytes are needed.
    /// - Throws: ``DaemonProtocolError`` `.emptyFrame` or `.frameTooLarge` as soon as the prefix
    ///   is in, without waiting for (or buffering) the announced bytes.
    package mutating func nextFrame() throws(DaemonProtocolError) -> [UInt8]? {
        guard bufferedCount >= DaemonProtocol.headerLength else { return nil }
        let prefix = buffer[start..<start + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let length = try DaemonProtocol.payloadLength(prefix: prefix)
        guard bufferedCount >= DaemonProtocol.headerLength + length else { return nil }
        let payloadStart = start + DaemonProtocol.headerLength
        let payload = Array(buffer[payloadStart..<payloadStart + length])
        start = payloadStart + length
        if start > 4096 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        return payload
    }
}
