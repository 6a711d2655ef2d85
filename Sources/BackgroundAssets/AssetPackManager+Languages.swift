internal import BACore
internal import BADaemonProtocol
import Foundation

// Localized asset packs (Apple's OS 27 members of `AssetPackManager`). basd chooses the language
// per app (`docs/packs.md`, "Localized packs"): the app's own (this property), else the user's
// preferred languages, in Apple's fallback order.
extension AssetPackManager {
    /// The language that best matches current preferences and for which the system automatically
    /// makes localized asset packs available locally.
    ///
    /// The preferred languages inform the choice of resolved language, respecting any language
    /// that your app sets manually by setting this property. This property may be `nil` if no
    /// localized asset packs are available. You can manually set this property to `nil` to
    /// revert to the system-wide language preference. If the preferred language changed
    /// recently, then this property's value might be temporarily out of sync with the set of
    /// asset packs that are available locally. Setting the language doesn't immediately download
    /// or remove any asset packs; call ``reconcilePreferredLanguages()`` to do so.
    ///
    /// On Linux: the getter asks basd (nil when basd cannot be reached); the setter records the
    /// language in basd, where it is kept across restarts (nothing happens when basd cannot be
    /// reached, or the language has no BCP-47 tag).
    public nonisolated var resolvedLanguage: Locale.Language? {
        get {
            do {
                return try connection.callReport(PackCommand(action: .list)).resolvedLanguage
                    .map(Locale.Language.init(identifier:))
            } catch {
                AppDaemonConnection.log("resolvedLanguage: basd did not answer (\(error)); nil")
                return nil
            }
        }
        set {
            if let newValue, newValue.packTag == nil {
                AppDaemonConnection.log("resolvedLanguage: \(newValue.minimalIdentifier) has no BCP-47 tag; not set")
                return
            }
            do {
                _ = try connection.callReport(PackCommand(action: .setLanguage, language: newValue?.packTag))
            } catch {
                AppDaemonConnection.log("resolvedLanguage: basd did not record it (\(error))")
            }
        }
    }

    /// Reconciles the set of locally available asset packs with the current preferred languages.
    ///
    /// This method downloads any missing localized asset packs, waits for those downloads to
    /// finish, and removes any unneeded ones. If you've overridden the preferred languages by
    /// setting ``resolvedLanguage``, then this method will respect that. It won't remove any
    /// localized asset packs that you've downloaded manually (``ensureLocalAvailability(of:)``).
    ///
    /// On Linux the preferred languages are this process's (`LANGUAGE`, `LC_ALL`, `LC_MESSAGES`,
    /// `LANG`, in glibc's order), sent to basd and kept for the app; when this process has none,
    /// basd uses those it kept, else its own environment's.
    ///
    /// - Throws: When the set of locally available asset packs can't be reconciled with the
    ///   preferred languages (a pack of the new language could not be downloaded: the old
    ///   language's packs then stay), or basd cannot be reached (``BAError``).
    public func reconcilePreferredLanguages() async throws {
        let preferred = PackLanguage.preferred(environment: ProcessInfo.processInfo.environment)
        _ = try await callReport(
            PackCommand(action: .reconcileLanguages, preferredLanguages: preferred.isEmpty ? nil : preferred))
    }

    /// The languages used by asset packs that are localized and are available locally.
    public var locallyAvailableLanguages: [Locale.Language] {
        get async {
            let packs: [PackInfo]
            do { packs = try await callReport(PackCommand(action: .list)).packs } catch {
                AppDaemonConnection.log("locallyAvailableLanguages: basd did not answer (\(error)); none")
                packs = []
            }
            let tags = packs.filter { $0.localVersion != nil }.compactMap {
                $0.language.flatMap(PackLanguage.canonical)
            }
            return Set(tags).sorted().map(Locale.Language.init(identifier:))
        }
    }

    /// Returns the contents of a localized asset file at the specified relative path.
    ///
    /// All asset packs share the same namespace; `language` limits the search to the local
    /// localized asset packs of the language that best matches it (exact, then its base
    /// language), in the order of their IDs. basd is asked which local packs have which language;
    /// the file is read from the disk as ``contents(at:searchingInAssetPackWithID:options:)`` reads.
    ///
    /// - Parameters:
    ///   - path: The relative path.
    ///   - language: The language that the framework uses to limit the search within localized
    ///     asset packs.
    ///   - options: Options for how to read the file's contents into a `Data` instance.
    /// - Returns: The file's contents.
    /// - Throws: ``ManagedBackgroundAssetsError/fileNotFound(at:)`` when no local pack of the
    ///   language has it.
    public nonisolated func contents(
        at path: FilePath, asLocalizedFor language: Locale.Language, options: Data.ReadingOptions = .mappedIfSafe
    ) throws -> Data {
        let file = try localized(path, language: language, files: true)
        defer { try? file.descriptor.close() }
        return try LocalPacks.readAll(file.descriptor, path: path)
    }

    /// Opens and returns a file descriptor for a localized asset file at the specified relative
    /// path. It's your responsibility to close the file descriptor when you're done using it.
    ///
    /// Looks `path` up as ``contents(at:asLocalizedFor:options:)`` does.
    ///
    /// - Parameters:
    ///   - path: The relative path.
    ///   - language: The language that the framework uses to limit the search within localized
    ///     asset packs.
    /// - Returns: A descriptor for the opened file.
    public nonisolated func descriptor(
        for path: FilePath, asLocalizedFor language: Locale.Language
    ) throws -> FileDescriptor {
        try localized(path, language: language, files: true).descriptor
    }

    /// Returns a URL for the specified relative path in the local localized asset packs of
    /// `language` (looked up as ``contents(at:asLocalizedFor:options:)`` does). Don't persist the
    /// returned URL beyond the lifetime of the current process.
    ///
    /// - Parameters:
    ///   - path: The relative path.
    ///   - language: The language that the framework uses to limit the search within localized
    ///     asset packs.
    /// - Returns: The URL to the item.
    public nonisolated func url(for path: FilePath, asLocalizedFor language: Locale.Language) throws -> URL {
        let item = try localized(path, language: language, files: false)
        try? item.descriptor.close()
        return URL(fileURLWithPath: item.path, isDirectory: item.isFolder)
    }

    /// `path` in the local packs of the best match of `language`.
    private nonisolated func localized(
        _ path: FilePath, language: Locale.Language, files: Bool
    ) throws -> LocalPacks.Item {
        let infos: [PackInfo]
        do { infos = try connection.call(PackCommand(action: .list)) } catch let loss as PackConnection.Lost {
            throw loss.error
        }
        let local = infos.filter { $0.localVersion != nil }.compactMap { info in
            info.language.flatMap(PackLanguage.canonical).map { (info.assetPackID, $0) }
        }
        guard let wanted = language.packTag,
            let tag = PackLanguage.resolve(available: local.map(\.1), preferred: [wanted], fallsBack: false)
        else { throw ManagedBackgroundAssetsError.fileNotFound(at: path) }
        return try LocalPacks(links: try connection.packsFolder()).locate(
            path, pack: nil, files: files, among: local.filter { $0.1 == tag }.map(\.0))
    }
}
