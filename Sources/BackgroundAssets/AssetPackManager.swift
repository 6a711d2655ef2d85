internal import BADaemonProtocol
import Foundation

/// An actor that manages the app's asset packs (Apple's managed Background Assets, OS 26).
///
/// basd downloads and updates the packs the app's download manifest (`BAManifestURL`, written by
/// `ba pack publish`) lists, as their download policies say: essential packs before
/// `ba install` returns, prefetch packs in the background, on-demand packs when asked. The
/// manager asks basd for them and reads their files: every local pack is one folder tree
/// under the app group container (`AppAssetPacks/BUNDLE_ID/ID/…`, the app's own whatever other
/// apps its group has), and all of them share one namespace.
///
/// ```swift
/// let assetPack = try await AssetPackManager.shared.assetPack(withID: "Tutorial")
/// let statusUpdates = AssetPackManager.shared.statusUpdates(forAssetPackWithID: "Tutorial")
/// Task {
///     for await statusUpdate in statusUpdates {
///         if case .downloading(_, let progress) = statusUpdate { print(progress.fractionCompleted) }
///     }
/// }
/// try await AssetPackManager.shared.ensureLocalAvailability(of: assetPack)
/// let videoData = try AssetPackManager.shared.contents(at: "Videos/Introduction.m4v")
/// ```
///
/// The app needs `BAHasManagedAssetPacks`, `BAManifestURL` and `BAAppGroupID` in its
/// `Info.plist` (docs/info-plist.md). Calls that need basd (listing, downloading, updating,
/// removing packs) and cannot reach it throw ``BAError`` 55 naming its socket; reading the local
/// packs' files and their local status works without basd, from the disk. A pack is local only once a
/// ``DownloadStatusUpdate/finished(_:)`` update was posted for it; ``ensureLocalAvailability(of:)``
/// never checks for updates unless asked to.
public actor AssetPackManager {
    /// The shared manager.
    public static let shared = AssetPackManager(connection: .shared)

    nonisolated let connection: PackConnection

    /// An asynchronous sequence of download-status updates for all asset packs. It never
    /// finishes; each `for await` loop gets the updates from when it starts. As on Apple's system
    /// it is the actor's (`for await update in await AssetPackManager.shared.statusUpdates`).
    public let statusUpdates: some Sendable & AsyncSequence<DownloadStatusUpdate, Never> =
        StatusUpdateSequence(connection: .shared, pack: nil)

    init(connection: PackConnection) {
        self.connection = connection
    }

    // MARK: Tracking downloads

    /// Returns an asynchronous sequence of download-status updates for the asset pack with the
    /// specified ID, from the moment of this call. It finishes after yielding
    /// ``DownloadStatusUpdate/finished(_:)`` or ``DownloadStatusUpdate/failed(_:_:)``.
    public nonisolated func statusUpdates(
        forAssetPackWithID assetPackID: String
    ) -> some Sendable & AsyncSequence<DownloadStatusUpdate, Never> {
        StatusUpdateSequence(connection: connection, pack: assetPackID, startNow: true)
    }

    // MARK: Accessing asset packs

    /// The manifest of asset packs that are available to download: the app's download manifest as
    /// basd last read it.
    public var manifest: AssetPackManifest {
        get async throws {
            let report = try await callReport(PackCommand(action: .list))
            return AssetPackManifest(
                assetPacks: Set(report.packs.filter { $0.serverVersion != nil }.compactMap(PackEventHub.assetPack)),
                resolvedLanguage: report.resolvedLanguage.map(Locale.Language.init(identifier:)))
        }
    }

    /// The asset packs that are available to download: those the app's download manifest lists.
    ///
    /// Deprecated in OS 27, as Apple's: use ``manifest`` and its ``AssetPackManifest/assetPacks``.
    @available(*, deprecated, message: "Use manifest.assetPacks instead")
    public var allAssetPacks: Set<AssetPack> {
        get async throws { try await manifest.assetPacks }
    }

    /// Returns the asset pack with the given ID.
    ///
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` when neither the
    ///   download manifest nor the device has it (after reading the manifest again).
    ///
    /// Deprecated in OS 27, as Apple's: use ``manifest`` and its
    /// ``AssetPackManifest/assetPack(withID:)``.
    @available(*, deprecated, message: "Use manifest.assetPack(withID:) instead")
    public func assetPack(withID assetPackID: String) async throws -> AssetPack {
        if let pack = try await describe(assetPackID) { return pack }
        _ = try? await call(PackCommand(action: .check))
        guard let pack = try await describe(assetPackID) else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: assetPackID)
        }
        return pack
    }

    // MARK: Accessing asset contents

    /// Returns the contents of an asset file at the specified relative path.
    ///
    /// All local asset packs share one namespace: `path` is looked for in each (in the order of
    /// their IDs), or only in `assetPackID`'s when given. Read from the disk (no call to basd, which
    /// need not be running); a link on the way is never followed, and only a regular file is read.
    /// The file is read into memory, up to the size it had when opened, whatever `options` say
    /// (kept for Apple's signature).
    /// - Throws: ``ManagedBackgroundAssetsError/fileNotFound(at:)`` when no local pack has it;
    ///   ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` when `assetPackID` is not local.
    public nonisolated func contents(
        at path: FilePath, searchingInAssetPackWithID assetPackID: String? = nil, options: Data.ReadingOptions = []
    ) throws -> Data {
        let file = try LocalPacks(links: try connection.packsFolder()).locate(path, pack: assetPackID, files: true)
        defer { try? file.descriptor.close() }
        return try LocalPacks.readAll(file.descriptor, path: path)
    }

    /// Opens and returns a file descriptor (read-only, close-on-exec) for an asset file at the
    /// specified relative path. Close it when you are done (`try descriptor.close()`).
    ///
    /// Looks `path` up as ``contents(at:searchingInAssetPackWithID:options:)`` does.
    public nonisolated func descriptor(
        for path: FilePath, searchingInAssetPackWithID assetPackID: String? = nil
    ) throws -> FileDescriptor {
        try LocalPacks(links: try connection.packsFolder()).locate(path, pack: assetPackID, files: true).descriptor
    }

    /// Returns a URL for the specified relative path (a file or a folder) in the local asset
    /// packs' shared namespace: the first pack, in the order of their IDs, that has it (through
    /// the pack's link, so a later read sees the version current then). Works without basd.
    public nonisolated func url(for path: FilePath) throws -> URL {
        let item = try LocalPacks(links: try connection.packsFolder()).locate(path, pack: nil, files: false)
        try? item.descriptor.close()
        return URL(fileURLWithPath: item.path, isDirectory: item.isFolder)
    }

    // MARK: Managing asset packs

    /// Reads the download manifest again, updates local packs that are out of date (in the
    /// background) and removes obsolete ones.
    ///
    /// - Returns: The IDs of the packs being updated, and of those removed.
    @discardableResult
    public func checkForUpdates() async throws -> (updatingIDs: Set<String>, removedIDs: Set<String>) {
        let before = try await call(PackCommand(action: .list))
        let after = try await call(PackCommand(action: .check))
        return PackFiles.changes(before: before, after: after)
    }

    /// Ensures that the specified asset pack is available locally, downloading it if necessary,
    /// and waits until it is. Never checks for updates.
    public func ensureLocalAvailability(of assetPack: AssetPack) async throws {
        try await ensureLocalAvailability(of: assetPack, requireLatestVersion: false)
    }

    /// Ensures that an asset pack is available locally, downloading it if necessary.
    ///
    /// - Parameter shouldUpdate: With `true`, also waits for the latest version the download
    ///   manifest lists (read again first); with `false`, any local version will do and no update
    ///   is looked for.
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)``; `CancellationError`
    ///   when the download's `Progress` was cancelled; else an error in `BAManagedErrorDomain`
    ///   saying why the download failed (the pack is then not guaranteed to be local).
    public func ensureLocalAvailability(
        of assetPack: AssetPack, requireLatestVersion shouldUpdate: Bool = false
    )
        async throws
    {
        let connection = self.connection
        let id = assetPack.id
        // A lost connection (basd restarted) asks again, for as long as basd takes to come back
        // (at most `reconnectWindow`); a finished download is checked again.
        var lostAt: ContinuousClock.Instant?
        var backoff = Duration.milliseconds(20)
        var attempts = 0
        while attempts < 8 {
            let box = OutcomeBox()
            let waiter = connection.hub.wait(for: id) { box.resolve($0) }
            let infos: [PackInfo]
            do {
                infos = try await call(
                    PackCommand(action: .ensure, pack: id, requireLatest: shouldUpdate), passingLoss: true)
            } catch let loss as PackConnection.Lost {
                connection.hub.stopWaiting(waiter, with: .connectionLost)
                // basd went away (while this waited, or under the call): wait for it to come back,
                // a while. A process that never reached it is told at once.
                if lostAt == nil && loss.wasConnected { lostAt = .now }
                guard let lost = lostAt, ContinuousClock.now - lost < Self.reconnectWindow else { throw loss.error }
                try await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(1))
                continue
            } catch {
                connection.hub.stopWaiting(waiter, with: .connectionLost)
                if let error = error as? BAError, error.code == .callerConnectionInvalid,
                    try await describe(id) == nil
                {
                    throw ManagedBackgroundAssetsError.assetPackNotFound(withID: id)
                }
                throw error
            }
            attempts += 1
            lostAt = nil
            backoff = .milliseconds(20)
            guard let info = infos.first(where: { $0.assetPackID == id }) else {
                connection.hub.stopWaiting(waiter, with: .connectionLost)
                throw ManagedBackgroundAssetsError.assetPackNotFound(withID: id)
            }
            if PackFiles.isSatisfied(info, requireLatest: shouldUpdate) {
                connection.hub.stopWaiting(waiter, with: .finished)
                return
            }
            guard info.isDownloading else {
                connection.hub.stopWaiting(waiter, with: .connectionLost)
                throw PackEventHub.failure(
                    pack: id, PackFailure(info.error ?? "basd did not start downloading it", code: info.errorCode))
            }
            switch await box.value {
            case .finished:
                continue
            case .connectionLost:
                lostAt = .now
                continue
            case .failed(let failure):
                throw PackEventHub.failure(pack: id, failure)
            }
        }
        throw PackEventHub.failure(pack: id, PackFailure("it did not become local after several attempts"))
    }

    /// Ensures the specified asset packs are available locally, downloading them at once if
    /// necessary.
    ///
    /// - Throws: ``LocalAvailabilityError`` with the packs that became local and why the others
    ///   did not.
    public func ensureLocalAvailability(
        of assetPacks: Set<AssetPack>, requireLatestVersions shouldUpdate: Bool = false
    )
        async throws
    {
        let outcomes = await withTaskGroup(of: (AssetPack, (any Error)?).self) { group in
            for pack in assetPacks {
                group.addTask {
                    do {
                        try await self.ensureLocalAvailability(of: pack, requireLatestVersion: shouldUpdate)
                        return (pack, nil)
                    } catch {
                        return (pack, error)
                    }
                }
            }
            var outcomes: [(AssetPack, (any Error)?)] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        var failures: [AssetPack: any Error] = [:]
        for case (let pack, let error?) in outcomes { failures[pack] = error }
        guard failures.isEmpty else {
            throw LocalAvailabilityError(
                successes: Set(outcomes.filter { $0.1 == nil }.map(\.0)), failures: failures)
        }
    }

    /// Checks whether an asset pack is available locally: its link leads to a version's folder
    /// (read from the disk; basd need not be running).
    public nonisolated func assetPackIsAvailableLocally(withID assetPackID: String) -> Bool {
        guard let folder = try? connection.packsFolder() else { return false }
        return LocalPacks(links: folder).isLocal(assetPackID)
    }

    /// Checks the current status relative to a particular asset pack: whether the local version
    /// (if any) is the one `assetPack` describes.
    public func status(relativeTo assetPack: AssetPack) async throws -> AssetPack.Status {
        let info = try await call(PackCommand(action: .list)).first { $0.assetPackID == assetPack.id }
        guard let info else { throw ManagedBackgroundAssetsError.assetPackNotFound(withID: assetPack.id) }
        return PackFiles.status(info, relativeTo: assetPack.version)
    }

    /// Checks an asset pack's local status, as basd last knew the server's version (no
    /// network). Without basd, only the disk can say: `downloaded` if its link leads to a
    /// version, else empty (whether an update is available or the pack is obsolete needs basd's
    /// manifest).
    public func localStatus(ofAssetPackWithID assetPackID: String) async -> AssetPack.Status {
        if let infos = try? await call(PackCommand(action: .list)),
            let info = infos.first(where: { $0.assetPackID == assetPackID })
        {
            return PackFiles.status(info, relativeTo: nil)
        }
        return assetPackIsAvailableLocally(withID: assetPackID) ? .downloaded : []
    }

    /// Checks an asset pack's status against the download manifest, read again first.
    @available(*, deprecated, renamed: "status(relativeTo:)")
    public func status(ofAssetPackWithID assetPackID: String) async throws -> AssetPack.Status {
        let infos = try await call(PackCommand(action: .check))
        guard let info = infos.first(where: { $0.assetPackID == assetPackID }) else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: assetPackID)
        }
        return PackFiles.status(info, relativeTo: nil)
    }

    /// Removes the asset pack's files from the device (once no process has one open). It stays
    /// available to download again.
    ///
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)``.
    public func remove(assetPackWithID assetPackID: String) async throws {
        guard try await describe(assetPackID) != nil else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: assetPackID)
        }
        _ = try await call(PackCommand(action: .remove, pack: assetPackID))
    }

    // MARK: Helpers

    /// How long an `ensureLocalAvailability` that lost basd waits for it to come back.
    static let reconnectWindow = Duration.seconds(30)

    /// The pack as basd lists it now, or nil.
    private func describe(_ id: String) async throws -> AssetPack? {
        try await call(PackCommand(action: .list)).first { $0.assetPackID == id }.flatMap(PackEventHub.assetPack)
    }

    /// A `packs` request, off the cooperative pool (the connection blocks). A lost connection
    /// throws its ``BAError`` (55 or 56), or ``PackConnection/Lost`` with `passingLoss`.
    func call(_ command: PackCommand, passingLoss: Bool = false) async throws -> [PackInfo] {
        try await callReport(command, passingLoss: passingLoss).packs
    }

    /// ``call(_:passingLoss:)``, with basd's whole answer.
    func callReport(_ command: PackCommand, passingLoss: Bool = false) async throws -> PackReport {
        let connection = self.connection
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                do {
                    continuation.resume(returning: try connection.callReport(command))
                } catch let loss as PackConnection.Lost {
                    continuation.resume(throwing: passingLoss ? loss : loss.error)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}

extension AssetPackManager {
    /// Statuses of an asset-pack download. A pack is available locally only after a
    /// ``finished(_:)`` update was posted.
    public enum DownloadStatusUpdate: Sendable, CustomStringConvertible {
        /// The download began, or went on after being paused.
        case began(AssetPack)
        /// The download is paused: waiting for disk space, or for Low Power Mode to end.
        case paused(AssetPack)
        /// The download is in progress. The same `Progress` comes with every update of one
        /// download: cancelling it cancels the download (what is verified so far is kept).
        case downloading(AssetPack, Progress)
        /// The download finished: the pack is available locally.
        case finished(AssetPack)
        /// The download failed.
        case failed(AssetPack, any Error)

        public var description: String {
            switch self {
            case .began(let pack): "began(\(pack.id))"
            case .paused(let pack): "paused(\(pack.id))"
            case .downloading(let pack, let progress):
                "downloading(\(pack.id), \(progress.completedUnitCount)/\(progress.totalUnitCount))"
            case .finished(let pack): "finished(\(pack.id))"
            case .failed(let pack, let error): "failed(\(pack.id), \(error))"
            }
        }
    }

    /// An error that says which asset packs became local and which did not, and why.
    public struct LocalAvailabilityError: Error, CustomNSError, LocalizedError, Sendable {
        /// The packs that are available locally.
        public let successes: Set<AssetPack>
        /// The packs that are not, with why.
        public let failures: [AssetPack: any Error]

        public static var errorDomain: String { BAManagedErrorDomain }
        public var errorCode: Int { BAManagedErrorCode.localAvailabilityFailure.rawValue }
        public var errorDescription: String? {
            "\(failures.count) of \(failures.count + successes.count) asset packs could not be made local: "
                + failures.map { "\($0.key.id): \($0.value.localizedDescription)" }.sorted().joined(separator: "; ")
        }
    }
}

/// The outcome of one wait, resolved once from the event thread.
private final class OutcomeBox: @unchecked Sendable {
    private let lock = NSLock()
    private var outcome: PackEventHub.Outcome?
    private var continuation: CheckedContinuation<PackEventHub.Outcome, Never>?

    func resolve(_ value: PackEventHub.Outcome) {
        let waiting: CheckedContinuation<PackEventHub.Outcome, Never>? = lock.withLock {
            guard outcome == nil else { return nil }
            outcome = value
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: value)
    }

    var value: PackEventHub.Outcome {
        get async {
            await withCheckedContinuation { continuation in
                let ready: PackEventHub.Outcome? = lock.withLock {
                    if let outcome { return outcome }
                    self.continuation = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}

/// The status-update sequences: each `for await` loop listens from when it starts; a per-pack
/// sequence listens from its creation (so that a loop started in a task after
/// `ensureLocalAvailability` began misses nothing), once.
struct StatusUpdateSequence: AsyncSequence, Sendable {
    typealias Element = AssetPackManager.DownloadStatusUpdate
    typealias Failure = Never

    private let connection: PackConnection
    private let pack: String?
    private let early: EarlyStream

    init(connection: PackConnection, pack: String?, startNow: Bool = false) {
        self.connection = connection
        self.pack = pack
        early = EarlyStream(startNow ? Self.listen(connection, pack) : nil)
    }

    func makeAsyncIterator() -> AsyncStream<Element>.Iterator {
        (early.take() ?? Self.listen(connection, pack)).makeAsyncIterator()
    }

    /// A stream of updates from now on, with the connection that brings them on its way.
    private static func listen(_ connection: PackConnection, _ pack: String?) -> AsyncStream<Element> {
        let stream = connection.hub.listen(pack: pack)
        connection.connectInBackground()
        return stream
    }

    /// The stream made at creation, for the first loop only.
    final class EarlyStream: @unchecked Sendable {
        private let lock = NSLock()
        private var held: AsyncStream<Element>?

        init(_ stream: AsyncStream<Element>?) { held = stream }

        func take() -> AsyncStream<Element>? {
            lock.withLock {
                defer { held = nil }
                return held
            }
        }
    }
}
