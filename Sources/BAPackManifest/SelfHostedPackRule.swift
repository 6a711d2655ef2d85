import Foundation

/// One pack of a self-hosted download manifest as an app reads it itself (Apple's OS 26
/// `AssetPackManifest(contentsOf:appGroupID:)`): what `AssetPack` shows and what its
/// `download(for:)` needs.
package struct SelfHostedPack: Sendable, Hashable {
    package var id: String
    package var version: Int
    package var downloadSize: Int64
    /// The entry's `userInfo` as JSON (sorted keys), nil when it has none.
    package var userInfo: [UInt8]?
    /// The canonical BCP-47 tag of a localized pack, nil for one that is not localized.
    package var language: String?
    package var indexURL: String
    package var indexSHA256: String
    package var downloadPolicy: PackDownloadPolicy
}

extension DownloadManifest {
    /// The manifest's packs as an app reads them: each entry once, in order, without the entries
    /// whose language is not a BCP-47 tag (basd refuses such a pack, not the manifest).
    package func selfHostedPacks() -> [SelfHostedPack] {
        assetPacks.filter(\.hasValidLanguage).map { entry in
            SelfHostedPack(
                id: entry.assetPackID, version: entry.version, downloadSize: entry.downloadSize,
                userInfo: entry.userInfo.flatMap { try? JSONCoding.encoder.encode($0) }.map(Array.init),
                language: entry.canonicalLanguage, indexURL: entry.indexURL, indexSHA256: entry.indexSHA256,
                downloadPolicy: entry.downloadPolicy)
        }
    }
}

/// Which packs of a self-hosted manifest an app or its extension downloads, and which of them are
/// essential (Apple's `AssetPackManifest.allDownloads(for:)` and `AssetPack.download(for:)`): no
/// I/O, table-tested (SelfHostedPackRuleTests).
///
/// | asked                       | packs                                                   | essential          |
/// |-----------------------------|---------------------------------------------------------|--------------------|
/// | the app (no content request)| every pack                                              | none               |
/// | install                     | essential and prefetch packs with `firstInstallation`   | the essential ones |
/// | update                      | essential and prefetch packs with `subsequentUpdate`    | the essential ones |
/// | periodic, language change   | essential and prefetch packs                            | none               |
///
/// On-demand packs only ever come with no content request (the app asks for them). A localized
/// pack comes only in the resolved language; a pack that is not localized always.
package enum SelfHostedPackRule {
    /// Why the downloads are asked for: `BAContentRequest`, or the app itself.
    package enum Occasion: Sendable, Hashable, CaseIterable {
        case app, install, update, periodic, languageChange
    }

    /// Whether a pack of `policy` is downloaded on `occasion` (nil: it is not), and if it is,
    /// whether as an essential download.
    package static func essential(_ policy: PackDownloadPolicy, on occasion: Occasion) -> Bool? {
        switch (occasion, policy) {
        case (.app, _): false
        case (_, .onDemand): nil
        case (.install, .essential(let events)): events.contains(.firstInstallation) ? true : nil
        case (.install, .prefetch(let events)): events.contains(.firstInstallation) ? false : nil
        case (.update, .essential(let events)): events.contains(.subsequentUpdate) ? true : nil
        case (.update, .prefetch(let events)): events.contains(.subsequentUpdate) ? false : nil
        case (.periodic, _), (.languageChange, _): false
        }
    }

    /// Whether a pack localized for `language` (nil: not localized) is downloaded when the
    /// manifest's resolved language is `resolved`.
    package static func fits(language: String?, resolved: String?) -> Bool {
        guard let language else { return true }
        return language == resolved
    }

    /// Whether a pack of `policy`, localized for `language` (nil: not localized), is downloaded
    /// on `occasion` when the manifest's resolved language is `resolvedLanguage` (nil: it is
    /// not), and if it is, whether as an essential download.
    package static func download(
        policy: PackDownloadPolicy, language: String?, on occasion: Occasion, resolvedLanguage: String?
    ) -> Bool? {
        guard fits(language: language, resolved: resolvedLanguage) else { return nil }
        return essential(policy, on: occasion)
    }
}
