/// `BADownload.State` with Apple's raw values: the one download state of the project (the store's
/// `state` column, the daemon protocol, the extension ABI's `ba_download.state` and the app's
/// `BADownload.State` all use these numbers).
public enum DownloadState: Int, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case failed = -1
    case created = 0
    case waiting = 1
    case downloading = 2
    case finished = 3

    /// Created, waiting or downloading: the download is scheduled and goes on after a restart.
    /// At most one active download per (app, identifier).
    public var isActive: Bool { self != .failed && self != .finished }

    public var description: String {
        switch self {
        case .failed: "failed"
        case .created: "created"
        case .waiting: "waiting"
        case .downloading: "downloading"
        case .finished: "finished"
        }
    }
}

/// A download as it travels: the one description of a download from an app or extension to a file
/// and back.
///
/// An app's `BAURLDownload` becomes one; it crosses the extension boundary in it (the runner builds
/// one from each `ba_download` an extension hands over, and the host validates it with
/// ``DownloadRules`` before anything else trusts it); it is the `download` of the daemon protocol's
/// `schedule` and of every listing; basd's store row embeds it. Plain values, no Foundation.
///
/// Its JSON (the daemon protocol) has the fields an app sets; a ``uniqueIdentifier`` not yet
/// assigned (empty), an unknown ``fileSize`` (0), ``allowsExpensiveNetworkAccess`` true and ``isAssetPack`` false (key
/// `assetPack`) are left out, as are ``state`` (a listing
/// carries it beside the description) and ``isWellFormed`` (decoded descriptions are well formed).
public struct DownloadDescription: Sendable, Hashable, Codable {
    /// One HTTP request header: the one header type of the project (the engine's requests, the
    /// daemon protocol and the store use it too).
    public struct Header: Sendable, Hashable, Codable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// `BADownload.identifier`, chosen by the app.
    public var identifier: String
    /// `BADownload.uniqueIdentifier`; empty until one is assigned (basd assigns one when a client
    /// did not).
    public var uniqueIdentifier: String
    /// The URL to fetch.
    public var url: String
    /// The request's headers, in order.
    public var headers: [Header]
    /// The app group the finished file is delivered into.
    public var applicationGroupIdentifier: String?
    /// `BADownload.Priority` raw value: higher first, among background downloads.
    public var priority: Int64
    /// Whether the download is essential.
    public var isEssential: Bool
    /// The exact size the file must have, in bytes; 0 is unknown.
    public var fileSize: Int64
    /// The lowercase hex SHA-256 the finished file must have (a Linux addition).
    public var sha256: String?
    /// False when the request said the download must not use an expensive network (Apple's
    /// `URLRequest.allowsExpensiveNetworkAccess`, `allowsConstrainedNetworkAccess` or
    /// `allowsCellularAccess` false): basd holds it while the network is metered.
    public var allowsExpensiveNetworkAccess: Bool
    /// Where the download stands.
    public var state: DownloadState
    /// False when a field arrived malformed across the extension boundary (invalid UTF-8, a NULL
    /// pointer with a length, an over-long string): such a description is rejected by
    /// ``DownloadRules``, never used.
    public var isWellFormed: Bool
    /// True when the download is an asset pack from a self-hosted manifest (Apple's
    /// `AssetPack.download(for:)`): ``identifier`` is the pack's ID, ``url`` its index's URL,
    /// ``sha256`` the index's SHA-256 and ``fileSize`` the pack's download size. basd installs
    /// the pack into the app group rather than delivering one file.
    package var isAssetPack: Bool

    /// The exact size, or nil when unknown.
    package var expectedSize: Int64? { fileSize > 0 ? fileSize : nil }

    package init(
        identifier: String, uniqueIdentifier: String = "", url: String, headers: [Header] = [],
        applicationGroupIdentifier: String? = nil, priority: Int64 = DownloadRules.defaultPriority,
        isEssential: Bool = false, fileSize: Int64 = 0, sha256: String? = nil,
        allowsExpensiveNetworkAccess: Bool = true, state: DownloadState = .created, isWellFormed: Bool = true,
        isAssetPack: Bool = false
    ) {
        self.identifier = identifier
        self.uniqueIdentifier = uniqueIdentifier
        self.url = url
        self.headers = headers
        self.applicationGroupIdentifier = applicationGroupIdentifier
        self.priority = priority
        self.isEssential = isEssential
        self.fileSize = fileSize
        self.sha256 = sha256
        self.allowsExpensiveNetworkAccess = allowsExpensiveNetworkAccess
        self.state = state
        self.isWellFormed = isWellFormed
        self.isAssetPack = isAssetPack
    }

    private enum CodingKeys: String, CodingKey {
        case identifier, uniqueIdentifier, url, headers, applicationGroupIdentifier, priority, isEssential, fileSize
        case sha256, allowsExpensiveNetworkAccess
        case isAssetPack = "assetPack"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            identifier: try container.decode(String.self, forKey: .identifier),
            uniqueIdentifier: try container.decodeIfPresent(String.self, forKey: .uniqueIdentifier) ?? "",
            url: try container.decode(String.self, forKey: .url),
            headers: try container.decode([Header].self, forKey: .headers),
            applicationGroupIdentifier: try container.decodeIfPresent(String.self, forKey: .applicationGroupIdentifier),
            priority: try container.decode(Int64.self, forKey: .priority),
            isEssential: try container.decode(Bool.self, forKey: .isEssential),
            fileSize: try container.decodeIfPresent(Int64.self, forKey: .fileSize) ?? 0,
            sha256: try container.decodeIfPresent(String.self, forKey: .sha256),
            allowsExpensiveNetworkAccess: try container.decodeIfPresent(
                Bool.self, forKey: .allowsExpensiveNetworkAccess)
                ?? true,
            isAssetPack: try container.decodeIfPresent(Bool.self, forKey: .isAssetPack) ?? false)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(identifier, forKey: .identifier)
        if !uniqueIdentifier.isEmpty { try container.encode(uniqueIdentifier, forKey: .uniqueIdentifier) }
        try container.encode(url, forKey: .url)
        try container.encode(headers, forKey: .headers)
        try container.encodeIfPresent(applicationGroupIdentifier, forKey: .applicationGroupIdentifier)
        try container.encode(priority, forKey: .priority)
        try container.encode(isEssential, forKey: .isEssential)
        if fileSize != 0 { try container.encode(fileSize, forKey: .fileSize) }
        try container.encodeIfPresent(sha256, forKey: .sha256)
        if !allowsExpensiveNetworkAccess { try container.encode(false, forKey: .allowsExpensiveNetworkAccess) }
        if isAssetPack { try container.encode(true, forKey: .isAssetPack) }
    }
}

extension DownloadDescription {
    /// Its layout on the runner's binary channel (``RunnerMessage``, ``HostMessage``).
    package func encode(into writer: inout ByteWriter) {
        writer.string(identifier)
        writer.string(uniqueIdentifier)
        writer.string(url)
        writer.optionalString(applicationGroupIdentifier)
        writer.i64(fileSize)
        writer.i64(priority)
        writer.bool(isEssential)
        writer.i32(Int32(state.rawValue))
        writer.u32(UInt32(truncatingIfNeeded: headers.count))
        for header in headers {
            writer.string(header.name)
            writer.string(header.value)
        }
        writer.optionalString(sha256)
        writer.bool(allowsExpensiveNetworkAccess)
        writer.bool(isAssetPack)
        writer.bool(isWellFormed)
    }

    /// At most this many headers per download are read.
    package static let maximumHeaderCount = 64

    package static func decode(from reader: inout ByteReader) throws(WireError) -> DownloadDescription {
        var valid = true
        let identifier = try reader.string(valid: &valid)
        let uniqueIdentifier = try reader.string(valid: &valid)
        let url = try reader.string(valid: &valid)
        let group: String? = try reader.bool() ? try reader.string(valid: &valid) : nil
        let fileSize = try reader.i64()
        let priority = try reader.i64()
        let essential = try reader.bool()
        let rawState = try reader.i32()
        guard let state = DownloadState(rawValue: Int(rawState)) else {
            throw WireError("download has state \(rawState); states are -1 to 3")
        }
        let headerCount = Int(try reader.u32())
        guard headerCount <= maximumHeaderCount else {
            throw WireError("download has \(headerCount) headers; at most \(maximumHeaderCount) are allowed")
        }
        var headers: [Header] = []
        for _ in 0..<headerCount {
            let name = try reader.string(valid: &valid)
            let value = try reader.string(valid: &valid)
            headers.append(Header(name: name, value: value))
        }
        let sha256: String? = try reader.bool() ? try reader.string(valid: &valid) : nil
        let allowsExpensive = try reader.bool()
        let isAssetPack = try reader.bool()
        let senderValid = try reader.bool()
        return DownloadDescription(
            identifier: identifier, uniqueIdentifier: uniqueIdentifier, url: url, headers: headers,
            applicationGroupIdentifier: group, priority: priority, isEssential: essential, fileSize: fileSize,
            sha256: sha256, allowsExpensiveNetworkAccess: allowsExpensive, state: state,
            isWellFormed: valid && senderValid, isAssetPack: isAssetPack)
    }
}
