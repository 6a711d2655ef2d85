import BACore
import BAPackManifest
import Foundation

/// Apple's asset-pack manifest (`ba-package`'s `Manifest.json`), as `ba pack build` reads it.
///
/// ```json
/// { "assetPackID": "levels",
///   "downloadPolicy": { "prefetch": { "installationEventTypes": ["firstInstallation", "subsequentUpdate"] } },
///   "fileSelectors": [ { "directory": "Levels" }, { "file": "Intro.m4v" } ],
///   "platforms": ["linux", "macOS"],
///   "userInfo": { "tier": 1 },
///   "language": "en-GB" }
/// ```
package struct PackManifest: Sendable, Hashable {
    /// When a pack is downloaded (the one model: ``PackDownloadPolicy``, in BAPackManifest).
    package typealias DownloadPolicy = PackDownloadPolicy
    /// Apple's installation event types (``PackInstallationEvent``, in BAPackManifest).
    package typealias InstallationEvent = PackInstallationEvent

    /// Which files belong to the pack, relative to the manifest's folder (or `--root`).
    package enum FileSelector: Sendable, Hashable {
        case file(String)
        case directory(String)
    }

    package var assetPackID: String
    package var downloadPolicy: DownloadPolicy
    package var fileSelectors: [FileSelector]
    /// Apple's platform names and `linux`; empty means every platform.
    package var platforms: [String]
    package var userInfo: JSONValue?
    /// Steam-style mappings (``FileMapping``, `ba pack convert`'s), besides ``fileSelectors``.
    package var fileMappings: [FileMapping] = []
    /// Patterns of files (relative to the root) that no mapping or selector packs.
    package var fileExclusions: [String] = []
    /// The folder the files are read from, relative to the manifest's folder (or absolute); nil:
    /// the manifest's folder. `--root` wins over it.
    package var contentRoot: String?
    /// The BCP-47 language the pack is localized for (Apple's OS 27 `language`, canonical case:
    /// `en-GB`); nil for a pack that is not localized.
    package var language: String? = nil

    /// Whether the pack is for Linux (its platforms name `linux`, or name none).
    package var isForLinux: Bool { platforms.isEmpty || platforms.contains { $0.lowercased() == "linux" } }

    /// The platform names a manifest may use.
    package static let knownPlatforms: Set<String> = [
        "linux", "iOS", "iPadOS", "macOS", "tvOS", "visionOS", "watchOS",
    ]

    /// Reads a manifest's JSON, saying what is wrong and how to fix it.
    package static func parse(_ data: [UInt8]) throws(PackError) -> PackManifest {
        let raw: Raw
        do {
            raw = try JSONCoding.decoder.decode(Raw.self, from: Data(data))
        } catch {
            throw PackError("the manifest is not valid: \(JSONCoding.describe(error))")
        }
        guard let id = raw.assetPackID, !id.isEmpty else {
            throw PackError(
                "the manifest has no \"assetPackID\": give the pack a name, e.g. \"assetPackID\": \"levels\"")
        }
        guard Self.isValidID(id) else {
            throw PackError(
                "assetPackID \"\(id)\" is not usable: use 1 to 128 letters, digits, '.', '-' or '_', not starting with '.'"
            )
        }
        guard let policy = raw.downloadPolicy else {
            throw PackError(
                "the manifest of \(id) has no \"downloadPolicy\": give one of essential, prefetch or onDemand")
        }
        let given = [policy.essential != nil, policy.prefetch != nil, policy.onDemand != nil].filter { $0 }.count
        guard given == 1 else {
            throw PackError(
                "the downloadPolicy of \(id) must have exactly one of essential, prefetch or onDemand; it has \(given)")
        }
        let downloadPolicy: DownloadPolicy
        if let essential = policy.essential {
            downloadPolicy = .essential(try Self.events(essential, policy: "essential", id: id))
        } else if let prefetch = policy.prefetch {
            downloadPolicy = .prefetch(try Self.events(prefetch, policy: "prefetch", id: id))
        } else {
            downloadPolicy = .onDemand
        }
        let mappings = try Self.mappings(raw.fileMappings ?? [], id: id)
        let exclusions = try Self.exclusions(raw.fileExclusions ?? [], id: id)
        if let root = raw.contentRoot, root.isEmpty {
            throw PackError("the contentRoot of \(id) is empty: remove it, or name a folder")
        }
        var selectors: [FileSelector] = []
        for (index, selector) in (raw.fileSelectors ?? []).enumerated() {
            switch (selector.file, selector.directory) {
            case (let file?, nil): selectors.append(.file(try Self.relativePath(file, id: id)))
            case (nil, let directory?): selectors.append(.directory(try Self.relativePath(directory, id: id)))
            default:
                throw PackError(
                    "fileSelectors[\(index)] of \(id) must have exactly one of \"file\" or \"directory\"")
            }
        }
        guard !selectors.isEmpty || !mappings.isEmpty else {
            throw PackError(
                "the manifest of \(id) selects no files: add {\"file\": …} or {\"directory\": …} to fileSelectors, or fileMappings"
            )
        }
        let platforms = raw.platforms ?? []
        if let unknown = platforms.first(where: { !Self.knownPlatforms.contains($0) }) {
            throw PackError(
                "the platforms of \(id) name \"\(unknown)\"; known: \(Self.knownPlatforms.sorted().joined(separator: ", "))"
            )
        }
        var language: String?
        if let tag = raw.language {
            guard let canonical = PackLanguage.canonical(tag) else {
                throw PackError(
                    "the language of \(id), \"\(tag.prefix(64))\", is not a BCP-47 language tag: give e.g. \"en\", \"en-GB\" or \"zh-Hant\""
                )
            }
            language = canonical
        }
        return PackManifest(
            assetPackID: id, downloadPolicy: downloadPolicy, fileSelectors: selectors, platforms: platforms,
            userInfo: raw.userInfo, fileMappings: mappings, fileExclusions: exclusions, contentRoot: raw.contentRoot,
            language: language)
    }

    /// 1–128 of `[A-Za-z0-9._-]`, not starting with a dot (it names a folder on the device):
    /// ``PackNames/isValidID(_:)``.
    package static func isValidID(_ id: String) -> Bool { PackNames.isValidID(id) }

    private static func events(
        _ policy: Raw.Events, policy name: String, id: String
    ) throws(PackError)
        -> Set<InstallationEvent>
    {
        var events: Set<InstallationEvent> = []
        for text in policy.installationEventTypes ?? [] {
            guard let event = InstallationEvent(rawValue: text) else {
                throw PackError(
                    "the \(name) policy of \(id) names installation event \"\(text)\"; use firstInstallation or subsequentUpdate"
                )
            }
            events.insert(event)
        }
        guard !events.isEmpty else {
            throw PackError(
                "the \(name) policy of \(id) has no installationEventTypes: give firstInstallation, subsequentUpdate or both"
            )
        }
        return events
    }

    /// A selector's path: relative, no `..`, no empty or `.` parts, normalized without a trailing slash.
    static func relativePath(_ path: String, id: String) throws(PackError) -> String {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
        guard !path.hasPrefix("/"), !parts.isEmpty, !parts.contains("..") else {
            throw PackError(
                "file selector \"\(path)\" of \(id) must be a path inside the manifest's folder (relative, without ..)")
        }
        return parts.joined(separator: "/")
    }

    /// The manifest as JSON says it, before it is checked.
    private struct Raw: Decodable {
        struct Events: Decodable { var installationEventTypes: [String]? }
        struct OnDemand: Decodable {}
        struct Policy: Decodable {
            var essential: Events?
            var prefetch: Events?
            var onDemand: OnDemand?
        }
        struct Selector: Decodable {
            var file: String?
            var directory: String?
        }
        var assetPackID: String?
        var downloadPolicy: Policy?
        var fileSelectors: [Selector]?
        var platforms: [String]?
        var userInfo: JSONValue?
        var fileMappings: [FileMapping.Raw]?
        var fileExclusions: [String]?
        var contentRoot: String?
        var language: String?
    }
}
