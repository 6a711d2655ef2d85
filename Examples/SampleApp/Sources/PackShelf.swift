// The sample app's asset packs, through Apple's AssetPackManager (Examples/SampleApp/packs: `base`
// essential, `levels` prefetch, `extras` on demand), as Apple's documentation writes it: a pack's
// files are read by their paths (those of its manifest's selectors) in the shared namespace of
// every local pack.
import BackgroundAssets

enum PackShelf {
    /// At launch: the essential pack is local (basd downloaded it before `ba install` returned);
    /// ensuring it costs nothing then. The prefetch pack may still be arriving.
    static func openBase() async throws {
        let manager = AssetPackManager.shared
        // The manifest as basd last read it (OS 27's form of OS 26's assetPack(withID:)).
        guard let base = try await manager.manifest.assetPack(withID: "base") else {
            // Installed without its packs (its Info.plist without BAHasManagedAssetPacks, and a
            // manifest that lists none): the catalog's assets are all it has.
            say("no asset pack base: this copy of the app was installed without asset packs")
            return
        }
        try await manager.ensureLocalAvailability(of: base)
        let strings = try manager.contents(at: "Base/strings.bin")
        say("read Base/strings.bin (\(strings.count) bytes) from asset pack base \(base.version) with AssetPackManager")
        let levels = manager.assetPackIsAvailableLocally(withID: "levels")
        say("asset pack levels is \(levels ? "local" : "still arriving in the background (prefetch)")")
    }

    /// The player opens the extras: the on-demand pack is downloaded now, with its progress from
    /// the pack's status updates, then read through a file descriptor.
    static func openExtras() async throws {
        let manager = AssetPackManager.shared
        guard let extras = try await manager.manifest.assetPack(withID: "extras") else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: "extras")
        }
        say(
            "asset pack extras \(extras.version): \(extras.downloadSize) bytes to download; ensureLocalAvailability(of:)"
        )
        let updates = manager.statusUpdates(forAssetPackWithID: "extras")
        let progress = Task {
            var quarter = 0
            for await update in updates {
                switch update {
                case .began(let pack): say("status update: began (version \(pack.version))")
                case .paused: say("status update: paused")
                case .downloading(_, let progress):
                    let reached = Int(progress.fractionCompleted * 4)
                    if reached > quarter && reached < 4 {
                        quarter = reached
                        say("status update: downloading, \(Int(progress.fractionCompleted * 100)) %")
                    }
                case .finished: say("status update: finished")
                case .failed(_, let error): say("status update: failed: \(error.localizedDescription)")
                }
            }
        }
        try await manager.ensureLocalAvailability(of: extras)
        await progress.value
        let descriptor = try manager.descriptor(for: "Extras/remix.m4a", searchingInAssetPackWithID: "extras")
        defer { try? descriptor.close() }
        let size = try descriptor.seek(offset: 0, from: .end)
        say("opened Extras/remix.m4a (\(size) bytes) from asset pack extras")
    }
}
