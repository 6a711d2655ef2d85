import BAExtensionProtocol

/// A request from a client to basd, with the id its response will carry.
///
/// On the wire it is one flat JSON object: `{"id": 1, "type": "status"}`, the request's fields
/// beside `id` and `type` (see `docs/protocol.md`).
public struct ClientMessage: Sendable, Hashable, Codable {
    /// Chosen by the client; basd copies it into the response. Unique per connection by convention.
    public var id: UInt64
    /// What the client asks for.
    public var request: Request

    /// Creates a message.
    public init(id: UInt64, request: Request) {
        self.id = id
        self.request = request
    }

    private enum CodingKeys: String, CodingKey {
        case id, type, protocolVersion, client, download, identifier, throughSequence
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UInt64.self, forKey: .id)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "hello":
            request = .hello(
                protocolVersion: try container.decode(Int.self, forKey: .protocolVersion),
                client: try container.decode(ClientInfo.self, forKey: .client))
        case "status": request = .status
        case "schedule": request = .schedule(try container.decode(DownloadPayload.self, forKey: .download))
        case "startForeground":
            request = .startForeground(identifier: try container.decode(String.self, forKey: .identifier))
        case "cancel": request = .cancel(identifier: try container.decode(String.self, forKey: .identifier))
        case "currentDownloads": request = .currentDownloads
        case "acknowledgeEvents":
            request = .acknowledgeEvents(throughSequence: try container.decode(Int64.self, forKey: .throughSequence))
        default: throw UnknownMessageType(type: type, id: id)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(request.type, forKey: .type)
        switch request {
        case .hello(let version, let client):
            try container.encode(version, forKey: .protocolVersion)
            try container.encode(client, forKey: .client)
        case .status, .currentDownloads: break
        case .schedule(let download): try container.encode(download, forKey: .download)
        case .startForeground(let identifier), .cancel(let identifier):
            try container.encode(identifier, forKey: .identifier)
        case .acknowledgeEvents(let sequence): try container.encode(sequence, forKey: .throughSequence)
        }
    }
}

/// What a client asks basd for.
public enum Request: Sendable, Hashable {
    /// The handshake: must be the first request on a connection. Answered with `ok`, or with
    /// error 55 (and a close) when `protocolVersion` is not supported.
    case hello(protocolVersion: Int, client: ClientInfo)
    /// basd's state: answered with ``ServerMessage/Result/status(_:)``.
    case status
    /// `BADownloadManager.scheduleDownload(_:)`: answered with `ok`.
    case schedule(DownloadPayload)
    /// `BADownloadManager.startForegroundDownload(_:)` of the client app's download `identifier`.
    case startForeground(identifier: String)
    /// `BADownloadManager.cancel(_:)` of the client app's download `identifier`.
    case cancel(identifier: String)
    /// `BADownloadManager.fetchCurrentDownloads()`: answered with ``ServerMessage/Result/downloads(_:)``.
    case currentDownloads
    /// The client has handled every event up to and including `throughSequence`; basd stops
    /// redelivering them.
    case acknowledgeEvents(throughSequence: Int64)

    /// The wire name (`type`) of the request.
    public var type: String {
        switch self {
        case .hello: "hello"
        case .status: "status"
        case .schedule: "schedule"
        case .startForeground: "startForeground"
        case .cancel: "cancel"
        case .currentDownloads: "currentDownloads"
        case .acknowledgeEvents: "acknowledgeEvents"
        }
    }
}

/// Who is connecting, sent in `hello`.
public struct ClientInfo: Sendable, Hashable, Codable {
    /// The kind of client.
    public enum Role: String, Sendable, Hashable, Codable, CaseIterable {
        /// An app's process (`BADownloadManager` in the app).
        case app
        /// An extension's runner process.
        case `extension`
        /// A `ba` command.
        case cli
    }

    /// The kind of client.
    public var role: Role
    /// The app's bundle identifier (an app or its extension); nil for the CLI.
    public var bundleIdentifier: String?
    /// The client's process id, as it claims (basd trusts only the kernel's `SO_PEERCRED`).
    public var pid: Int32

    /// Creates client info.
    public init(role: Role, bundleIdentifier: String? = nil, pid: Int32) {
        self.role = role
        self.bundleIdentifier = bundleIdentifier
        self.pid = pid
    }
}

/// A download as a client hands it to basd: the fields of a `BAURLDownload` (basd's
/// `StoredDownload` adds the state and bookkeeping).
public struct DownloadPayload: Sendable, Hashable, Codable {
    /// One request header.
    public typealias Header = DownloadRecord.Header

    /// `BADownload.identifier`, chosen by the app.
    public var identifier: String
    /// The URL to fetch.
    public var url: String
    /// The request's headers, in order.
    public var headers: [Header]
    /// The app group the finished file is delivered into.
    public var applicationGroupIdentifier: String?
    /// `BADownload.Priority` raw value.
    public var priority: Int64
    /// Whether the download is essential.
    public var isEssential: Bool
    /// The exact size the file must have; nil when unknown.
    public var fileSize: Int64?
    /// The lowercase hex SHA-256 the file must have (a Linux addition).
    public var sha256: String?

    /// Creates a payload.
    public init(
        identifier: String, url: String, headers: [Header] = [], applicationGroupIdentifier: String? = nil,
        priority: Int64 = 0, isEssential: Bool = false, fileSize: Int64? = nil, sha256: String? = nil
    ) {
        self.identifier = identifier
        self.url = url
        self.headers = headers
        self.applicationGroupIdentifier = applicationGroupIdentifier
        self.priority = priority
        self.isEssential = isEssential
        self.fileSize = fileSize
        self.sha256 = sha256
    }
}

/// Thrown from `init(from:)` for an unknown `type`, so the codec can tell it from bad JSON.
struct UnknownMessageType: Error {
    var type: String
    var id: UInt64?
}
