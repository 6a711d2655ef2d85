internal import BACore
internal import BAPackManifest
import Foundation

/// The `NSError` user-info key under which a refused self-hosted manifest names the rule it broke
/// (Linux addition): `format`, `json`, `manifestSize`, `id`, `version`, `downloadSize`, `url`,
/// `indexSHA256`, `language`, `packs`, `host`, …, as the download manifest's checks name them.
public let BAManifestCheckErrorKey = "BAManifestCheckErrorKey"

// A self-hosted manifest that the app reads and schedules itself (Apple's OS 26 members of
// `AssetPackManifest`), for an app that manages its packs with an unmanaged `BADownloaderExtension`.
extension AssetPackManifest {
    /// Creates a manifest in memory given a URL to the manifest's representation as a JSON file on disk.
    ///
    /// Reads at most 16 MiB (a larger file is refused before it is read) of a regular file, then
    /// decodes it as ``init(from:appGroupID:)`` does.
    ///
    /// - Parameters:
    ///   - url: A file URL of the manifest (in an extension, the `manifestURL` of
    ///     ``BADownloaderExtension/downloads(for:manifestURL:extensionInfo:)``).
    ///   - appGroupID: The ID of the app group in which to store unmanaged asset packs that are
    ///     downloaded from this manifest.
    /// - Throws: `CocoaError` with `.fileReadNoSuchFile`, `.fileReadNoPermission`,
    ///   `.fileReadTooLarge`, `.fileReadUnsupportedScheme` or `.fileReadUnknown` when the file
    ///   cannot be read; otherwise as ``init(from:appGroupID:)``.
    public init(contentsOf url: URL, appGroupID: String) throws {
        try Self.checkAppGroup(appGroupID)
        guard url.isFileURL else {
            throw CocoaError(
                .fileReadUnsupportedScheme,
                userInfo: [
                    NSURLErrorKey: url,
                    NSLocalizedDescriptionKey:
                        "the manifest URL \(url.absoluteString.prefix(200)) is not a file URL: download the manifest first, then read the file",
                ])
        }
        let bytes: [UInt8]
        do {
            bytes = try RegularFile.read(url.path, limit: PackLimits.maximumManifestBytes)
        } catch {
            let code: CocoaError.Code =
                if error.isMissing {
                    .fileReadNoSuchFile
                } else if error.isTooLarge {
                    .fileReadTooLarge
                } else if error.errno == EACCES || error.errno == EPERM {
                    .fileReadNoPermission
                } else {
                    .fileReadUnknown
                }
            var info: [String: Any] = [NSFilePathErrorKey: url.path, NSLocalizedDescriptionKey: error.message]
            if let number = error.errno, let posix = POSIXErrorCode(rawValue: number) {
                info[NSUnderlyingErrorKey] = POSIXError(posix)
            }
            throw CocoaError(code, userInfo: info)
        }
        try self.init(bytes: bytes, appGroupID: appGroupID)
    }

    /// Creates a manifest in memory given JSON-encoded data.
    ///
    /// The data is the download manifest in Apple's self-hosted shape (`ba pack publish` writes
    /// it: each entry's `id`, `url`, `version`, `downloadSize`, `downloadPolicy`, `host`, and
    /// here also the `indexSHA256` of the pack's index, which `url` names), or in format 1 or 2.
    /// It is checked as basd checks a manifest it fetches (at most 16 MiB and 1,000 packs, each
    /// ID usable as a folder name and listed once, versions, sizes, index URLs and SHA-256s well
    /// formed); an entry whose `language` is not a BCP-47 tag is left out. A signature is not
    /// checked: the data is one the app chose (and the packs' files are checked against each
    /// index's SHA-256 when they are installed).
    ///
    /// - Parameters:
    ///   - data: The manifest's JSON.
    ///   - appGroupID: The ID of the app group in which to store unmanaged asset packs that are
    ///     downloaded from this manifest.
    /// - Throws: `CocoaError(.coderReadCorrupt)` when the manifest breaks a rule: its
    ///   `localizedDescription` says which and how to fix it, and its `userInfo` names the rule
    ///   under ``BAManifestCheckErrorKey``. ``BAError`` with ``BAError/Code/downloadInvalid``
    ///   when `appGroupID` is empty or cannot name a folder.
    public init(from data: Data, appGroupID: String) throws {
        try Self.checkAppGroup(appGroupID)
        try self.init(bytes: Array(data), appGroupID: appGroupID)
    }

    private init(bytes: [UInt8], appGroupID: String) throws {
        let manifest: DownloadManifest
        do {
            manifest = try DownloadManifest.decode(bytes)
        } catch {
            var info: [String: Any] = [
                NSLocalizedDescriptionKey: error.description, NSDebugDescriptionErrorKey: error.description,
            ]
            if let check = error.operation { info[BAManifestCheckErrorKey] = check }
            throw CocoaError(.coderReadCorrupt, userInfo: info)
        }
        let packs = manifest.selfHostedPacks().map { pack in
            AssetPack(
                id: pack.id, version: pack.version, downloadSize: Int(pack.downloadSize),
                userInfo: pack.userInfo.map { Data($0) },
                language: pack.language.map(Locale.Language.init(identifier:)),
                selfHosted: .init(
                    indexURL: pack.indexURL, indexSHA256: pack.indexSHA256, downloadPolicy: pack.downloadPolicy,
                    appGroupID: appGroupID))
        }
        self.init(assetPacks: Set(packs))
    }

    /// An app group a manifest can be read for: one the downloads can name (``DownloadRules``).
    private static func checkAppGroup(_ appGroupID: String) throws(BAError) {
        if let violation = DownloadRules.checkFolderName(appGroupID, what: "appGroupID") {
            throw BAError(
                .downloadInvalid,
                reason: appGroupID.isEmpty
                    ? "appGroupID is empty: give the ID of the app group the asset packs are stored in"
                    : violation.reason)
        }
    }

    /// Creates download objects for every applicable asset pack in this manifest, which can be
    /// scheduled with the download manager.
    ///
    /// Which packs, and which of them are essential:
    /// - `nil` (the main app): every pack, none essential.
    /// - ``BAContentRequest/install`` (``BAContentRequest/update``): the essential and prefetch
    ///   packs whose policy names `firstInstallation` (`subsequentUpdate`); the essential ones are
    ///   essential downloads.
    /// - ``BAContentRequest/periodic``, ``BAContentRequest/languageChange``: the essential and
    ///   prefetch packs, none essential.
    ///
    /// On-demand packs come only with `nil`. A localized pack comes only when it is localized for
    /// ``resolvedLanguage``; a pack that is not localized always. Each download is the pack's
    /// ``AssetPack/download(for:)``. A manifest from ``AssetPackManager/manifest`` gives none: its
    /// packs are managed (``AssetPackManager/ensureLocalAvailability(of:)``).
    ///
    /// - Parameter contentRequest: The content request for the current extension invocation.
    ///   Pass `nil` when calling this method in your main app.
    /// - Returns: A collection of download objects.
    public func allDownloads(for contentRequest: BAContentRequest?) -> Set<BADownload> {
        let resolved = resolvedLanguage?.packTag
        let occasion = SelfHostedPackRule.Occasion(contentRequest)
        var downloads = Set<BADownload>()
        for pack in assetPacks {
            guard let source = pack.selfHosted,
                SelfHostedPackRule.download(
                    policy: source.downloadPolicy, language: pack.language?.packTag, on: occasion,
                    resolvedLanguage: resolved) != nil
            else { continue }
            downloads.insert(pack.download(for: contentRequest))
        }
        return downloads
    }
}
