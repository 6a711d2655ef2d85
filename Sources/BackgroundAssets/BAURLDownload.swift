package import BACore
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A download of one URL.
///
/// ```swift
/// let request = URLRequest(url: URL(string: "https://cdn.example.com/level-1.pak")!)
/// let download = BAURLDownload(
///     identifier: "level-1", request: request, essential: true, fileSize: 1_048_576,
///     applicationGroupIdentifier: "group.com.example.game", priority: .max)
/// ```
/// The URL must be https (plain http is accepted only for loopback hosts, for development).
/// An essential download needs the exact `fileSize`: a file of another size fails.
public final class BAURLDownload: BADownload, @unchecked Sendable {
    /// The request the system performs.
    public let request: URLRequest
    /// The expected size in bytes (0 if unknown).
    public let fileSize: Int
    /// Linux addition: the SHA-256 (hex) the finished file must have, or nil.
    public let baExpectedSHA256: String?
    /// An asset pack's download (``AssetPack/download(for:)``): the request fetches the pack's
    /// index, and the system installs the pack into the app group rather than delivering a file.
    let isAssetPack: Bool

    /// Creates a download, essential or not.
    /// - Parameters:
    ///   - identifier: Unique among the app's downloads; no `/`, `..` or NUL.
    ///   - request: The request to perform (https, or http to a loopback host).
    ///   - essential: Whether the app needs it before first launch (only from install/update).
    ///   - fileSize: The exact size in bytes; required (> 0) for an essential download.
    ///   - applicationGroupIdentifier: The app group that receives the file.
    ///   - priority: Relative priority among the app's downloads.
    public init(
        identifier: String, request: URLRequest, essential: Bool, fileSize: Int, applicationGroupIdentifier: String,
        priority: BADownload.Priority = .default
    ) {
        self.request = request
        self.fileSize = fileSize
        self.baExpectedSHA256 = nil
        self.isAssetPack = false
        super.init(
            identifier: identifier, uniqueIdentifier: UUID().uuidString, state: .created, priority: priority,
            isEssential: essential, applicationGroupIdentifier: applicationGroupIdentifier)
    }

    /// Creates a non-essential download with a known size.
    public convenience init(identifier: String, request: URLRequest, fileSize: Int, applicationGroupIdentifier: String)
    {
        self.init(
            identifier: identifier, request: request, essential: false, fileSize: fileSize,
            applicationGroupIdentifier: applicationGroupIdentifier, priority: .default)
    }

    /// Creates a non-essential download of unknown size (the 2022 initializer).
    @available(*, deprecated, renamed: "init(identifier:request:fileSize:applicationGroupIdentifier:)")
    public convenience init(identifier: String, request: URLRequest, applicationGroupIdentifier: String) {
        self.init(
            identifier: identifier, request: request, essential: false, fileSize: 0,
            applicationGroupIdentifier: applicationGroupIdentifier, priority: .default)
    }

    /// Creates a non-essential download of unknown size with a priority (the 2022 initializer).
    @available(
        *, deprecated, renamed: "init(identifier:request:essential:fileSize:applicationGroupIdentifier:priority:)"
    )
    public convenience init(
        identifier: String, request: URLRequest, applicationGroupIdentifier: String, priority: BADownload.Priority
    ) {
        self.init(
            identifier: identifier, request: request, essential: false, fileSize: 0,
            applicationGroupIdentifier: applicationGroupIdentifier, priority: priority)
    }

    /// A download with every field given (used to rebuild downloads the system hands back).
    init(
        identifier: String, uniqueIdentifier: String, state: State, request: URLRequest, essential: Bool, fileSize: Int,
        applicationGroupIdentifier: String, priority: Priority, expectedSHA256: String?, isAssetPack: Bool = false
    ) {
        self.request = request
        self.fileSize = fileSize
        self.baExpectedSHA256 = expectedSHA256
        self.isAssetPack = isAssetPack
        super.init(
            identifier: identifier, uniqueIdentifier: uniqueIdentifier, state: state, priority: priority,
            isEssential: essential, applicationGroupIdentifier: applicationGroupIdentifier)
    }

    /// Linux addition: a copy whose finished file must have this SHA-256 (64 hex digits), or the
    /// download fails instead of delivering it.
    public func baVerifyingSHA256(_ hex: String) -> BAURLDownload {
        BAURLDownload(
            identifier: identifier, uniqueIdentifier: uniqueIdentifier, state: state, request: request,
            essential: isEssential,
            fileSize: fileSize, applicationGroupIdentifier: applicationGroupIdentifier, priority: priority,
            expectedSHA256: hex.lowercased(), isAssetPack: isAssetPack)
    }

    public override func removingEssential() -> Self {
        // The class is final: Self is BAURLDownload.
        BAURLDownload(
            identifier: identifier, uniqueIdentifier: uniqueIdentifier, state: state, request: request,
            essential: false,
            fileSize: fileSize, applicationGroupIdentifier: applicationGroupIdentifier, priority: priority,
            expectedSHA256: baExpectedSHA256, isAssetPack: isAssetPack) as! Self
    }

    private enum Key {
        static let url = "request.url"
        static let method = "request.httpMethod"
        static let headers = "request.allHTTPHeaderFields"
        static let fileSize = "fileSize"
        static let sha256 = "baExpectedSHA256"
        static let assetPack = "baIsAssetPack"
    }

    public override class var supportsSecureCoding: Bool { true }

    /// Encodes the download, with its request's URL, method and header fields.
    public override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        if let url = request.url { coder.encode(url.absoluteString as NSString, forKey: Key.url) }
        if let method = request.httpMethod { coder.encode(method as NSString, forKey: Key.method) }
        let headers = NSMutableDictionary()
        for (name, value) in request.allHTTPHeaderFields ?? [:] { headers[name as NSString] = value as NSString }
        coder.encode(headers, forKey: Key.headers)
        coder.encode(fileSize, forKey: Key.fileSize)
        if let sha256 = baExpectedSHA256 { coder.encode(sha256 as NSString, forKey: Key.sha256) }
        if isAssetPack { coder.encode(true, forKey: Key.assetPack) }
    }

    /// Decodes a download encoded by ``encode(with:)``; nil when the URL is missing or invalid.
    public required init?(coder: NSCoder) {
        guard let string = coder.decodeObject(of: NSString.self, forKey: Key.url), let url = URL(string: String(string))
        else { return nil }
        var request = URLRequest(url: url)
        // Optional keys are looked for first: swift-corelibs-foundation fails the whole decode
        // for a missing key.
        if coder.containsValue(forKey: Key.method) {
            request.httpMethod = coder.decodeObject(of: NSString.self, forKey: Key.method).map(String.init)
        }
        if coder.containsValue(forKey: Key.headers),
            let headers = coder.decodeObject(of: [NSDictionary.self, NSString.self], forKey: Key.headers)
                as? NSDictionary
        {
            for (name, value) in headers {
                guard let name = name as? NSString, let value = value as? NSString else { continue }
                request.setValue(String(value), forHTTPHeaderField: String(name))
            }
        }
        self.request = request
        self.fileSize = coder.decodeInteger(forKey: Key.fileSize)
        self.baExpectedSHA256 =
            coder.containsValue(forKey: Key.sha256)
            ? coder.decodeObject(of: NSString.self, forKey: Key.sha256).map(String.init) : nil
        self.isAssetPack = coder.containsValue(forKey: Key.assetPack) && coder.decodeBool(forKey: Key.assetPack)
        super.init(coder: coder)
    }

    public override func copy(with zone: NSZone? = nil) -> Any {
        BAURLDownload(
            identifier: identifier, uniqueIdentifier: uniqueIdentifier, state: state, request: request,
            essential: isEssential,
            fileSize: fileSize, applicationGroupIdentifier: applicationGroupIdentifier, priority: priority,
            expectedSHA256: baExpectedSHA256, isAssetPack: isAssetPack)
    }
}

extension BAURLDownload {
    /// The download as a boundary record.
    package var record: DownloadDescription {
        DownloadDescription(
            identifier: identifier, uniqueIdentifier: uniqueIdentifier, url: request.url?.absoluteString ?? "",
            headers: request.baHeaderFields.map { .init(name: $0.name, value: $0.value) },
            applicationGroupIdentifier: applicationGroupIdentifier.isEmpty ? nil : applicationGroupIdentifier,
            priority: Int64(priority.rawValue), isEssential: isEssential, fileSize: Int64(fileSize),
            sha256: baExpectedSHA256, allowsExpensiveNetworkAccess: request.baAllowsMeteredNetwork,
            state: DownloadState(rawValue: state.rawValue) ?? .created, isAssetPack: isAssetPack)
    }

    /// Rebuilds a download from a boundary record (nil if its URL does not parse).
    package convenience init?(record: DownloadDescription) {
        guard let url = URL(string: record.url) else { return nil }
        var request = URLRequest(url: url)
        for header in record.headers { request.setValue(header.value, forHTTPHeaderField: header.name) }
        if !record.allowsExpensiveNetworkAccess { request.allowsExpensiveNetworkAccess = false }
        self.init(
            identifier: record.identifier,
            uniqueIdentifier: record.uniqueIdentifier.isEmpty ? UUID().uuidString : record.uniqueIdentifier,
            state: State(rawValue: record.state.rawValue) ?? .created, request: request, essential: record.isEssential,
            fileSize: Int(record.fileSize), applicationGroupIdentifier: record.applicationGroupIdentifier ?? "",
            priority: Priority(Int(clamping: record.priority)), expectedSHA256: record.sha256,
            isAssetPack: record.isAssetPack)
    }

    /// Checks the rules that need no daemon (identifier, URL scheme, essential size).
    func validate() throws(BAError) {
        if let violation = DownloadRules.check(record) {
            throw BAError(BAError.Code(rawValue: violation.code) ?? .downloadInvalid, reason: violation.reason)
        }
    }
}
