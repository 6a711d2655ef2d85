import Foundation

/// An archive of assets that the system downloads together: one version of one of the app's
/// asset packs, as the app's download manifest lists it: a managed pack (from
/// ``AssetPackManager``), or one of a self-hosted manifest the app reads itself
/// (``AssetPackManifest/init(contentsOf:appGroupID:)``), which ``download(for:)`` downloads.
///
/// An instance can go stale when the pack is updated on the server: ask
/// ``AssetPackManager/assetPack(withID:)`` again for the current one.
public struct AssetPack: Hashable, Identifiable, Sendable, Codable, CustomStringConvertible {
    /// A unique ID for the asset pack (its `assetPackID`).
    public let id: String
    /// The asset pack's version number.
    public let version: Int
    /// The size of the pack's download in bytes: the stored (compressed) bytes of its chunks, the
    /// most a first download fetches. The installed size can be larger.
    public let downloadSize: Int
    /// JSON-encoded custom information that's associated with the asset pack (the manifest's
    /// `userInfo`), or nil.
    public let userInfo: Data?
    /// The language for which this asset pack is localized (the manifest's BCP-47 `language`).
    ///
    /// This property is `nil` if the asset pack isn't localized and therefore isn't
    /// language-specific.
    public let language: Locale.Language?
    /// Where a pack of a self-hosted manifest comes from (nil for a managed pack): what
    /// ``download(for:)`` needs. Encoded (key `selfHosted`) only when there is one.
    let selfHosted: SelfHostedSource?

    /// Linux addition: an asset pack as the manager reports it. Apps get theirs from
    /// ``AssetPackManager``; this is for tests and tools.
    public init(
        id: String, version: Int, downloadSize: Int, userInfo: Data? = nil, language: Locale.Language? = nil
    ) {
        self.id = id
        self.version = version
        self.downloadSize = downloadSize
        self.userInfo = userInfo
        self.language = language
        self.selfHosted = nil
    }

    /// A pack of a self-hosted manifest.
    init(
        id: String, version: Int, downloadSize: Int, userInfo: Data?, language: Locale.Language?,
        selfHosted: SelfHostedSource
    ) {
        self.id = id
        self.version = version
        self.downloadSize = downloadSize
        self.userInfo = userInfo
        self.language = language
        self.selfHosted = selfHosted
    }

    public var description: String { "AssetPack(id: \(id), version: \(version), downloadSize: \(downloadSize))" }
}

extension AssetPack {
    /// The status of an asset pack: a set of flags, with the bit values of Apple's
    /// `BAAssetPackStatus`. Test membership with `contains(_:)`.
    public struct Status: OptionSet, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int
        /// Creates a status from its raw bits.
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// The asset pack is available to download.
        public static let downloadAvailable = Status(rawValue: 1 << 0)
        /// An update to the asset pack is available to download.
        public static let updateAvailable = Status(rawValue: 1 << 1)
        /// The downloaded asset pack is up to date.
        public static let upToDate = Status(rawValue: 1 << 2)
        /// The downloaded asset pack is out of date (whether the update can be downloaded now is
        /// ``updateAvailable``).
        public static let outOfDate = Status(rawValue: 1 << 3)
        /// The asset pack is no longer available to download: it cannot be updated, or downloaded
        /// again once removed.
        public static let obsolete = Status(rawValue: 1 << 4)
        /// The system is downloading the asset pack.
        public static let downloading = Status(rawValue: 1 << 5)
        /// The system finished downloading the asset pack: it is local.
        public static let downloaded = Status(rawValue: 1 << 6)

        static let names: [(Status, String)] = [
            (.downloadAvailable, "downloadAvailable"), (.updateAvailable, "updateAvailable"),
            (.upToDate, "upToDate"), (.outOfDate, "outOfDate"), (.obsolete, "obsolete"),
            (.downloading, "downloading"), (.downloaded, "downloaded"),
        ]

        /// The flags by name, e.g. `[downloaded, upToDate]`.
        public var description: String {
            "[" + Self.names.filter { contains($0.0) }.map(\.1).joined(separator: ", ") + "]"
        }
    }
}

/// The error domain of managed asset-pack errors (Apple's `BAManagedErrorDomain`).
public let BAManagedErrorDomain = "BAManagedErrorDomain"

/// The `NSError` user-info key for an asset pack's ID (Apple's `BAAssetPackIdentifierErrorKey`).
public let BAAssetPackIdentifierErrorKey = "BAAssetPackIdentifierErrorKey"

/// Apple's `BAManagedErrorCode` values.
public enum BAManagedErrorCode: Int, Sendable, CaseIterable {
    /// No asset pack with the given ID is known.
    case assetPackNotFound = 0
    /// No file at the given path in the local asset packs.
    case fileNotFound = 1
    /// The system could not make some or all of the requested asset packs local.
    case localAvailabilityFailure = 2
}

/// An error for a managed asset pack.
public enum ManagedBackgroundAssetsError: Error, LocalizedError, CustomStringConvertible, CustomNSError, Sendable {
    /// The system can't find an asset pack with the given ID.
    case assetPackNotFound(withID: String)
    /// The system can't find a file at the specified path.
    case fileNotFound(at: FilePath)

    public var description: String {
        switch self {
        case .assetPackNotFound(let id): "no asset pack with the ID \(id)"
        case .fileNotFound(let path): "no file at \(path.string) in the local asset packs"
        }
    }
    public var errorDescription: String? { description }

    public static var errorDomain: String { BAManagedErrorDomain }
    public var errorCode: Int {
        switch self {
        case .assetPackNotFound: BAManagedErrorCode.assetPackNotFound.rawValue
        case .fileNotFound: BAManagedErrorCode.fileNotFound.rawValue
        }
    }
    public var errorUserInfo: [String: Any] {
        switch self {
        case .assetPackNotFound(let id):
            [NSLocalizedDescriptionKey: description, BAAssetPackIdentifierErrorKey: id]
        case .fileNotFound(let path):
            [NSLocalizedDescriptionKey: description, NSFilePathErrorKey: path.string]
        }
    }
}
