// App-side asset-pack code as Apple's documentation and WWDC25 ("Discover Apple-Hosted Background
// Assets") write it, unchanged but for filling in the `// …` placeholders. It must compile in Swift
// 5 and Swift 6 language modes with no warning (AppleCompatibilityTests), through
// `import BackgroundAssets` alone (FilePath and FileDescriptor included). The functions that call
// `allAssetPacks` or `assetPack(withID:)`, OS 26 API that Apple deprecates in OS 27 for
// `AssetPackManager.manifest`, are marked deprecated themselves, as an OS 26 app built for OS 27
// would see them (a deprecated use inside a deprecated declaration does not warn).
import BackgroundAssets

enum TutorialAssets {
    /// WWDC25, "Download an asset pack".
    @available(*, deprecated, message: "OS 26 code: allAssetPacks and assetPack(withID:) are deprecated in OS 27")
    static func download() async throws {
        let assetPack = try await AssetPackManager.shared.assetPack(withID: "Tutorial")

        // Await status updates for progress information
        let statusUpdates = AssetPackManager.shared.statusUpdates(forAssetPackWithID: "Tutorial")
        Task {
            for await statusUpdate in statusUpdates {
                // "Show download progress", with the cases' leading dots.
                switch statusUpdate {
                case .began(let assetPack): print("began", assetPack.id)
                case .paused(let assetPack): print("paused", assetPack.id)
                case .downloading(let assetPack, let progress): print(assetPack.id, progress.fractionCompleted)
                case .finished(let assetPack): print("finished", assetPack.id)
                case .failed(let assetPack, let error): print(assetPack.id, error)
                }
            }
        }

        // Download the asset pack
        try await AssetPackManager.shared.ensureLocalAvailability(of: assetPack)
    }

    /// Reading files, as the documentation does.
    static func read() throws -> Data {
        let videoData = try AssetPackManager.shared.contents(at: "Videos/Introduction.m4v")
        let descriptor = try AssetPackManager.shared.descriptor(for: "Videos/Introduction.m4v")
        defer { try? descriptor.close() }
        let data = try AssetPackManager.shared.contents(
            at: "Videos/Introduction.m4v",
            searchingInAssetPackWithID: "Tutorial",
            options: []
        )
        let url = try AssetPackManager.shared.url(for: FilePath("Videos/Introduction.m4v"))
        print(url, data.count)
        return videoData
    }

    /// Status queries and the update lifecycle.
    @available(*, deprecated, message: "OS 26 code: allAssetPacks and assetPack(withID:) are deprecated in OS 27")
    static func manage(_ someAssetPack: AssetPack) async throws {
        let localStatus = await AssetPackManager.shared.localStatus(ofAssetPackWithID: "Tutorial")
        let isLocal = AssetPackManager.shared.assetPackIsAvailableLocally(withID: "Tutorial")
        let status = try await AssetPackManager.shared.status(relativeTo: someAssetPack)
        if status.contains(.downloaded) || status.contains(.upToDate) || localStatus.contains(.outOfDate) || isLocal {
            try await AssetPackManager.shared.ensureLocalAvailability(of: someAssetPack, requireLatestVersion: true)
        }
        try await AssetPackManager.shared.checkForUpdates()
        let (updatingIDs, removedIDs) = try await AssetPackManager.shared.checkForUpdates()
        print(updatingIDs, removedIDs)
        let packs = try await AssetPackManager.shared.allAssetPacks
        try await AssetPackManager.shared.ensureLocalAvailability(of: packs, requireLatestVersions: false)
        try await AssetPackManager.shared.remove(assetPackWithID: "Tutorial")
    }

    /// Errors, as apps catch them.
    @available(*, deprecated, message: "OS 26 code: allAssetPacks and assetPack(withID:) are deprecated in OS 27")
    static func configuration(relativeConfigPath: String) async throws -> URL? {
        let manager = AssetPackManager.shared
        do {
            _ = try await manager.assetPack(withID: "Model")
        } catch let error as ManagedBackgroundAssetsError {
            switch error {
            case .assetPackNotFound(withID: _):
                return nil
            case .fileNotFound(at: _):
                throw error
            @unknown default:
                throw error
            }
        }
        let configURL = try manager.url(for: FilePath(relativeConfigPath))
        guard FileManager.default.fileExists(atPath: configURL.path) else {
            throw ManagedBackgroundAssetsError.fileNotFound(at: FilePath(relativeConfigPath))
        }
        let descriptor = try manager.descriptor(for: FilePath(relativeConfigPath), searchingInAssetPackWithID: nil)
        try descriptor.close()
        return configURL
    }
}

/// A model that follows a pack's download, as apps write it (a third-party pattern).
enum ModelAssets {
    @available(*, deprecated, message: "OS 26 code: allAssetPacks and assetPack(withID:) are deprecated in OS 27")
    static func ensureModelIsAvailable(onProgress: @escaping @Sendable (Double) -> Void) async throws {
        let manager = AssetPackManager.shared
        let assetPack = try await manager.assetPack(withID: "Model")
        let progressTask = Task {
            for await update in manager.statusUpdates(forAssetPackWithID: assetPack.id) {
                switch update {
                case .began:
                    onProgress(0)
                case .downloading(_, let progress):
                    onProgress(progress.fractionCompleted)
                case .finished:
                    onProgress(1)
                case .paused, .failed:
                    continue
                @unknown default:
                    continue
                }
            }
        }
        defer { progressTask.cancel() }
        try await manager.ensureLocalAvailability(of: assetPack)
        for await update in await manager.statusUpdates where update.description.isEmpty { break }
    }
}
