/// A download as it crosses the extension boundary: plain values, no Foundation.
///
/// The runner builds one from each `ba_download` an extension hands it; the host validates it
/// with ``DownloadRules`` before anything else trusts it.
public struct DownloadRecord: Sendable, Hashable {
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

    public var identifier: String
    public var uniqueIdentifier: String
    public var url: String
    public var applicationGroupIdentifier: String?
    /// Expected size in bytes; 0 is unknown.
    public var fileSize: Int64
    public var priority: Int64
    public var isEssential: Bool
    /// `BADownload.State` raw value.
    public var state: Int32
    public var headers: [Header]
    /// Optional lowercase hex SHA-256 of the finished file (a Linux addition).
    public var sha256: String?
    /// False when a field arrived malformed (invalid UTF-8, a NULL pointer with a length, an
    /// over-long string): such a record is rejected by ``DownloadRules``, never used.
    public var isWellFormed: Bool

    package init(
        identifier: String, uniqueIdentifier: String = "", url: String, applicationGroupIdentifier: String? = nil,
        fileSize: Int64 = 0, priority: Int64 = DownloadRules.defaultPriority, isEssential: Bool = false,
        state: Int32 = 0, headers: [Header] = [], sha256: String? = nil, isWellFormed: Bool = true
    ) {
        self.identifier = identifier
        self.uniqueIdentifier = uniqueIdentifier
        self.url = url
        self.applicationGroupIdentifier = applicationGroupIdentifier
        self.fileSize = fileSize
        self.priority = priority
        self.isEssential = isEssential
        self.state = state
        self.headers = headers
        self.sha256 = sha256
        self.isWellFormed = isWellFormed
    }
}

extension DownloadRecord {
    package func encode(into writer: inout ByteWriter) {
        writer.string(identifier)
        writer.string(uniqueIdentifier)
        writer.string(url)
        writer.optionalString(applicationGroupIdentifier)
        writer.i64(fileSize)
        writer.i64(priority)
        writer.bool(isEssential)
        writer.i32(state)
        writer.u32(UInt32(truncatingIfNeeded: headers.count))
        for header in headers {
            writer.string(header.name)
            writer.string(header.value)
        }
        writer.optionalString(sha256)
        writer.bool(isWellFormed)
    }

    /// At most this many headers per download are read.
    package static let maximumHeaderCount = 64

    package static func decode(from reader: inout ByteReader) throws(WireError) -> DownloadRecord {
        var valid = true
        let identifier = try reader.string(valid: &valid)
        let uniqueIdentifier = try reader.string(valid: &valid)
        let url = try reader.string(valid: &valid)
        let group: String? = try reader.bool() ? try reader.string(valid: &valid) : nil
        let fileSize = try reader.i64()
        let priority = try reader.i64()
        let essential = try reader.bool()
        let state = try reader.i32()
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
        let senderValid = try reader.bool()
        return DownloadRecord(
            identifier: identifier, uniqueIdentifier: uniqueIdentifier, url: url, applicationGroupIdentifier: group,
            fileSize: fileSize, priority: priority, isEssential: essential, state: state, headers: headers,
            sha256: sha256, isWellFormed: valid && senderValid)
    }
}
