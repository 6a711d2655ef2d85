/// One request as ``AssetServer`` received it, kept for assertions (see ``AssetServer/requests``).
public struct RecordedRequest: Sendable, Equatable, CustomStringConvertible {
    /// One header line, with the name as the client spelled it.
    public struct Header: Sendable, Equatable {
        /// The header name as received (compare case-insensitively).
        public var name: String
        /// The header value as received.
        public var value: String
    }

    /// The method, for example `GET` or `HEAD`.
    public var method: String
    /// The request target as received, including any query, for example `/a.bin?x=1`.
    public var target: String
    /// The decoded path without the query, for example `/a b.bin` for `/a%20b.bin?x=1`; it is what
    /// ``AssetServer/requests(for:)`` matches. `nil`-free: an undecodable target is kept as received.
    public var path: String
    /// Every header line, in order.
    public var headers: [Header]

    /// The first value of the header `name` (case-insensitive), or `nil`.
    ///
    /// ```swift
    /// #expect(server.requests(for: "/a.bin").last?.header("range") == "bytes=10-")
    /// ```
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public var description: String {
        "\(method) \(target)" + headers.map { " | \($0.name): \($0.value)" }.joined()
    }
}
