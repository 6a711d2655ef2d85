/// One request as ``AssetServer`` received it, kept for assertions (see ``AssetServer/requests``).
package struct RecordedRequest: Sendable, Equatable, CustomStringConvertible {
    /// One header line, with the name as the client spelled it.
    package struct Header: Sendable, Equatable {
        /// The header name as received (compare case-insensitively).
        package var name: String
        /// The header value as received.
        package var value: String
    }

    /// The method, for example `GET` or `HEAD`.
    package var method: String
    /// The request target as received, including any query, for example `/a.bin?x=1`.
    package var target: String
    /// The decoded path without the query, for example `/a b.bin` for `/a%20b.bin?x=1`; it is what
    /// ``AssetServer/requests(for:)`` matches. `nil`-free: an undecodable target is kept as received.
    package var path: String
    /// Every header line, in order.
    package var headers: [Header]

    /// The first value of the header `name` (case-insensitive), or `nil`.
    ///
    /// ```swift
    /// #expect(server.requests(for: "/a.bin").last?.header("range") == "bytes=10-")
    /// ```
    package func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    package var description: String {
        "\(method) \(target)" + headers.map { " | \($0.name): \($0.value)" }.joined()
    }
}
