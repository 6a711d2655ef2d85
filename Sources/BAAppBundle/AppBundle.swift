import BACore
import Foundation

/// An app installed on Linux: a directory holding an `Info.plist`, read and checked.
///
/// The keys are those of Apple's Background Assets framework plus our `BAExtensionPath`;
/// `docs/info-plist.md` lists each one with its type and default. A value is only ever returned
/// whole: ``load(directory:)`` checks every key it reads before it returns.
///
/// ```swift
/// let app = try AppBundle.load(directory: "/opt/game")
/// print(app.bundleIdentifier, app.version, app.extensionPath ?? "no extension")
/// ```
package struct AppBundle: Equatable, Sendable {
    /// The app directory, absolute and standardized (no `.` or `..` components).
    package let directory: String
    /// The `Info.plist` the values came from: `directory + "/Info.plist"`.
    package let infoPlistPath: String
    /// `CFBundleIdentifier`: the app's identity in basd. A valid identifier (no `/`, `..`, NUL or
    /// control characters, at most 1024 bytes).
    package let bundleIdentifier: String
    /// `CFBundleShortVersionString`, or `CFBundleVersion` when the former is absent. Never empty.
    package let version: String
    /// `BAAppGroupID`: the app group shared by the app and its extension; names the group container
    /// and its exclusive-control lock. A valid identifier, like ``bundleIdentifier``.
    package let appGroupIdentifier: String
    /// `BAExtensionPath`, resolved against ``directory``: the absolute path of the extension's
    /// shared library, or nil when the app has no extension. Always inside ``directory``; the file
    /// is not required to exist when the bundle is loaded.
    package let extensionPath: String?
    /// `BAManifestURL`: where the manifest is fetched from before the extension runs; https, or
    /// plain http to a loopback host. Nil when the app declares none.
    package let manifestURL: String?
    /// `BAInitialDownloadRestrictions.BADownloadAllowance`: bytes of non-essential downloads allowed
    /// before the app's first launch. Nil when not declared.
    package let downloadAllowance: Int64?
    /// `BAInitialDownloadRestrictions.BAEssentialDownloadAllowance`: bytes of essential downloads
    /// allowed before the app's first launch. Nil when not declared.
    package let essentialDownloadAllowance: Int64?
    /// `BAInitialDownloadRestrictions.BADownloadDomainAllowList`: the hosts downloads may reach
    /// before first launch, lowercased. An entry is a host (`cdn.example.com`) or a `*.` wildcard
    /// (`*.example.com`, any subdomain). Nil when not declared; an empty array allows no host.
    package let domainAllowList: [String]?
    /// `BAMaxInstallSize`: the most bytes the app's non-essential assets take once installed.
    /// Nil when not declared.
    package let maxInstallSize: Int64?
    /// `BAEssentialMaxInstallSize`: the most bytes the app's essential assets take once installed.
    /// Nil when not declared.
    package let essentialMaxInstallSize: Int64?
    /// `BAHasManagedAssetPacks`: the app gets asset packs from the download manifest at
    /// ``manifestURL`` (`ba pack publish`'s). False when absent.
    package let hasManagedAssetPacks: Bool
    /// `BAAssetPackPublicKey`: the Ed25519 public key (32 bytes) the download manifest must be
    /// signed with; nil accepts an unsigned manifest.
    package let assetPackPublicKey: [UInt8]?
    /// `BADesktopEntry`: the app's desktop file id (`org.example.Game`, `.desktop` left off),
    /// under which basd shows install progress on the desktop's launcher; nil: the bundle
    /// identifier (reverse-DNS, the desktop-file convention) (`docs/info-plist.md`).
    package var desktopEntry: String? = nil
    /// `CFBundleDevelopmentRegion`: the app's primary language (`en`, `en_GB` as Apple writes
    /// it), the last fallback for its localized asset packs; nil when absent.
    package var developmentRegion: String? = nil

    /// The desktop file id the launcher knows the app by: ``desktopEntry``, else the bundle identifier.
    package var desktopFileID: String { desktopEntry ?? bundleIdentifier }

    /// Largest `Info.plist` read, in bytes: far above any real one, and keeps a hostile file from
    /// filling memory.
    package static let maximumInfoPlistSize = 1 << 20

    /// Reads and checks `directory/Info.plist` (XML or binary).
    ///
    /// Unknown keys are ignored. Nothing is touched but the `Info.plist`: the extension library
    /// need not exist yet.
    ///
    /// - Parameter directory: The app directory, absolute or relative to the current directory.
    /// - Returns: The app, with every field checked.
    /// - Throws: ``AppBundleError`` naming the `Info.plist` and, when one key is at fault, the key,
    ///   the type expected and what was found.
    package static func load(directory: String) throws(AppBundleError) -> AppBundle {
        let directory = URL(fileURLWithPath: directory, isDirectory: true).standardizedFileURL.path
        let plistPath = directory.hasSuffix("/") ? directory + "Info.plist" : directory + "/Info.plist"
        let root = try PlistReader.readRoot(path: plistPath)
        let reader = PlistReader(path: plistPath)

        let bundleIdentifier = try reader.identifier("CFBundleIdentifier", in: root, what: "bundle identifier")
        let version: String
        if let short = try reader.optionalNonEmptyString("CFBundleShortVersionString", in: root) {
            version = short
        } else if let long = try reader.optionalNonEmptyString("CFBundleVersion", in: root) {
            version = long
        } else {
            throw AppBundleError(
                .missingKey, path: plistPath, key: "CFBundleShortVersionString",
                message:
                    "CFBundleShortVersionString (or CFBundleVersion) is required: add the app's version as a string")
        }
        let appGroupIdentifier = try reader.identifier("BAAppGroupID", in: root, what: "app group identifier")
        let extensionPath = try reader.extensionPath("BAExtensionPath", in: root, directory: directory)
        let manifestURL = try reader.manifestURL("BAManifestURL", in: root)

        var downloadAllowance: Int64?
        var essentialDownloadAllowance: Int64?
        var domainAllowList: [String]?
        let restrictionsKey = "BAInitialDownloadRestrictions"
        if let restrictions = try reader.optionalDictionary(restrictionsKey, in: root) {
            let nested = reader.nested(in: restrictionsKey)
            downloadAllowance = try nested.optionalSize("BADownloadAllowance", in: restrictions)
            essentialDownloadAllowance = try nested.optionalSize("BAEssentialDownloadAllowance", in: restrictions)
            domainAllowList = try nested.optionalHostList("BADownloadDomainAllowList", in: restrictions)
        }
        let maxInstallSize = try reader.optionalSize("BAMaxInstallSize", in: root)
        let essentialMaxInstallSize = try reader.optionalSize("BAEssentialMaxInstallSize", in: root)
        let hasManagedAssetPacks = try reader.optionalBool("BAHasManagedAssetPacks", in: root) ?? false
        let assetPackPublicKey = try reader.optionalPublicKey("BAAssetPackPublicKey", in: root)
        let desktopEntry = try reader.desktopEntry("BADesktopEntry", in: root)
        let developmentRegion = try reader.optionalNonEmptyString("CFBundleDevelopmentRegion", in: root)
        if hasManagedAssetPacks, manifestURL == nil {
            throw AppBundleError(
                .missingKey, path: plistPath, key: "BAManifestURL",
                message:
                    "BAHasManagedAssetPacks is true but BAManifestURL is missing: set it to the URL of the download manifest `ba pack publish` wrote (BASE_URL/manifest.json)"
            )
        }

        return AppBundle(
            directory: directory, infoPlistPath: plistPath, bundleIdentifier: bundleIdentifier, version: version,
            appGroupIdentifier: appGroupIdentifier, extensionPath: extensionPath, manifestURL: manifestURL,
            downloadAllowance: downloadAllowance, essentialDownloadAllowance: essentialDownloadAllowance,
            domainAllowList: domainAllowList, maxInstallSize: maxInstallSize,
            essentialMaxInstallSize: essentialMaxInstallSize, hasManagedAssetPacks: hasManagedAssetPacks,
            assetPackPublicKey: assetPackPublicKey, desktopEntry: desktopEntry,
            developmentRegion: developmentRegion.flatMap { PackLanguage.fromLocaleName($0) })
    }
}
