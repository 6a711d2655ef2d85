import BACore
import Foundation

/// The download manifest (`manifest.json` at the app's `BAManifestURL`, signed beside it in
/// `manifest.json.sig`): the packs the app gets, and, from format 2, what makes the signed
/// bytes fresh and bound to their purpose (The Update Framework's threats: rollback, freeze,
/// mix-and-match): a ``sequence`` that must grow, an ``expires`` date and the ``apps`` it is
/// for. A device checks them with `ManifestTrust` (BAPacks).
///
/// One model for every format on the wire: format 3 is Apple's self-hosted shape (`id`, `url`,
/// `host`; `DownloadManifest+AppleShape.swift`), read and written through ``decode(_:)`` and
/// ``wireBytes()``. Its `Codable` conformance is the model's own form (format 1 and 2's keys),
/// which basd also stores an ``Entry`` in.
package struct DownloadManifest: Sendable, Hashable, Codable {
    /// One pack's entry.
    package struct Entry: Sendable, Hashable, Codable {
        package var assetPackID: String
        package var version: Int
        package var downloadSize: Int64
        package var downloadPolicy: PackDownloadPolicy
        package var userInfo: JSONValue?
        package var indexURL: String
        package var indexSHA256: String
        /// The publisher takes the pack back to an older version on purpose (`ba pack publish
        /// --downgrade ID=N`): without it a device refuses a version below its local one.
        package var allowsDowngrade: Bool?
        /// The BCP-47 language the pack is localized for (Apple's OS 27 `language`); nil when
        /// it is not localized. Bounded here (``PackLanguage/maximumLength`` bytes); a tag of
        /// the wrong shape refuses the pack, not the manifest (``hasValidLanguage``).
        package var language: String?

        package init(
            assetPackID: String, version: Int, downloadSize: Int64,
            downloadPolicy: PackDownloadPolicy, userInfo: JSONValue? = nil, indexURL: String,
            indexSHA256: String, allowsDowngrade: Bool? = nil, language: String? = nil
        ) {
            self.language = language
            self.assetPackID = assetPackID
            self.version = version
            self.downloadSize = downloadSize
            self.downloadPolicy = downloadPolicy
            self.userInfo = userInfo
            self.indexURL = indexURL
            self.indexSHA256 = indexSHA256
            self.allowsDowngrade = allowsDowngrade
        }
    }

    /// 3 from this build: Apple's shape (2: our own keys; 1: no sequence, expiry or apps, read
    /// only from an unsigned manifest).
    package var formatVersion: Int
    /// Grows with every manifest published from the folder (format 2; format 3 when signed).
    package var sequence: Int?
    /// After it, a device refuses the manifest (ISO 8601, UTC; format 2).
    package var expires: String?
    /// The bundle identifiers of the apps it is for (format 2).
    package var apps: [String]?
    package var assetPacks: [Entry]

    package init(
        formatVersion: Int = currentFormat, sequence: Int? = nil, expires: String? = nil, apps: [String]? = nil,
        assetPacks: [Entry]
    ) {
        self.formatVersion = formatVersion
        self.sequence = sequence
        self.expires = expires
        self.apps = apps
        self.assetPacks = assetPacks
    }

    /// ``expires`` as a date (nil when absent or not ISO 8601).
    package var expiryDate: Date? { expires.flatMap(Self.parseDate) }

    /// The format this build writes (`ba pack publish --manifest-format 2` writes the one before).
    package static let currentFormat = 3

    /// The manifest in `bytes`, in any format (``decodeUnchecked(_:)``), checked against
    /// ``PackLimits``: the format (1 to 3), format 2's sequence (1 to 2^53 − 1), expiry (ISO 8601)
    /// and apps (1 to 100 bundle identifiers), which format 3 has together or not at all; at most
    /// ``PackLimits/maximumPacks`` packs, each id once and usable, each version 1 to 2^53 − 1, each
    /// download size 0 to ``PackLimits/maximumPackBytes``, each index URL http(s) ending in
    /// `packs/ID/VERSION.json`, each index SHA-256 64 hex digits.
    ///
    /// - Throws: ``PackError`` (``PackError/Code/invalidMetadata``) naming the first broken rule.
    package static func decode(_ bytes: [UInt8]) throws(PackError) -> DownloadManifest {
        let manifest = try decodeUnchecked(bytes)
        try manifest.check()
        return manifest
    }

    private func check() throws(PackError) {
        guard (1...3).contains(formatVersion) else {
            throw .invalid(
                "the download manifest has format version \(formatVersion); this basd reads 1 to 3 (update basd)",
                check: "format")
        }
        // Format 3 is also what a person writes by hand in Apple's shape: unsigned, it may
        // leave out the freshness (as format 1); given, it is whole.
        if formatVersion == 2 || (formatVersion == 3 && (sequence != nil || expires != nil)) {
            guard let sequence, (1...PackLimits.maximumVersion).contains(sequence) else {
                throw .invalid(
                    "the download manifest (format \(formatVersion)) has no sequence from 1 to \(PackLimits.maximumVersion)",
                    check: "sequence")
            }
            guard expiryDate != nil else {
                throw .invalid(
                    "the download manifest (format \(formatVersion)) has no \"expires\" date in ISO 8601 (e.g. 2027-01-31T00:00:00Z)",
                    check: "expires")
            }
        }
        if formatVersion >= 2 {
            if let apps {
                guard (1...100).contains(apps.count),
                    apps.allSatisfy({ (1...255).contains($0.utf8.count) && !$0.contains("/") })
                else {
                    throw .invalid(
                        "the download manifest's \"apps\" must list 1 to 100 bundle identifiers", check: "apps")
                }
            }
        }
        guard assetPacks.count <= PackLimits.maximumPacks else {
            throw .invalid(
                "the download manifest lists \(assetPacks.count) packs; at most \(PackLimits.maximumPacks)",
                check: "packs")
        }
        var seen: Set<String> = []
        for entry in assetPacks {
            let id = entry.assetPackID
            guard PackNames.isValidID(id) else {
                throw .invalid("the download manifest lists an invalid pack \"\(id)\"", check: "id")
            }
            guard seen.insert(id).inserted else {
                throw .invalid("the download manifest lists pack \(id) twice", check: "id")
            }
            guard (1...PackLimits.maximumVersion).contains(entry.version) else {
                throw .invalid(
                    "the download manifest gives pack \(id) version \(entry.version); versions are 1 to \(PackLimits.maximumVersion)",
                    check: "version")
            }
            if let language = entry.language, language.utf8.count > PackLanguage.maximumLength {
                throw .invalid(
                    "the download manifest gives pack \(id) a language of \(language.utf8.count) bytes; BCP-47 tags here are at most \(PackLanguage.maximumLength)",
                    check: "language")
            }
            guard (0...PackLimits.maximumPackBytes).contains(entry.downloadSize) else {
                throw .invalid(
                    "the download manifest gives pack \(id) a download size of \(entry.downloadSize) bytes; it is 0 to \(PackLimits.maximumPackBytes)",
                    check: "downloadSize")
            }
            guard PackNames.isSHA256(entry.indexSHA256) else {
                throw .invalid(
                    "the download manifest gives pack \(id) a malformed index SHA-256", check: "indexSHA256")
            }
            let lower = entry.indexURL.lowercased()
            guard lower.hasPrefix("https://") || lower.hasPrefix("http://"),
                entry.indexURL.utf8.count <= 4096,
                entry.indexURL.hasSuffix("/" + PackNames.indexPath(id: id, version: entry.version))
            else {
                let key = formatVersion == 3 ? "url" : "indexURL"
                throw .invalid(
                    "the download manifest gives pack \(id) the \(key) \(entry.indexURL.prefix(200)); it is the http(s) URL of the pack's index, ending in /\(PackNames.indexPath(id: id, version: entry.version))"
                        + (formatVersion == 3
                            ? " (an Apple Archive is not read here: build the pack with `ba pack build`)" : ""),
                    check: key)
            }
        }
    }

    /// An ISO 8601 date in UTC, as ``expires`` is written.
    package static func formatDate(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    package static func parseDate(_ text: String) -> Date? {
        guard text.utf8.count <= 64 else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}

extension DownloadManifest.Entry {
    /// The entry's language in canonical case (nil: not localized, or not a BCP-47 tag).
    package var canonicalLanguage: String? { language.flatMap(PackLanguage.canonical) }

    /// False when the entry names a language that is not a BCP-47 tag: basd refuses the pack
    /// (never installs it, and says why), the manifest's other packs go on.
    package var hasValidLanguage: Bool { language == nil || canonicalLanguage != nil }
}
