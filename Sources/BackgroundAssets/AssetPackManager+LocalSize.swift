import Foundation

extension AssetPackManager {
    /// Returns a locally available asset pack's version number.
    ///
    /// Read from the disk (the pack's link), without basd, which need not be running.
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` when no asset pack
    ///   with the specified ID is available locally.
    public nonisolated func localVersion(ofAssetPackWithID assetPackID: String) throws -> Int {
        guard let version = LocalPacks(links: try connection.packsFolder()).currentVersion(of: assetPackID) else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: assetPackID)
        }
        return version
    }

    /// Calculates a locally available asset pack's installation size: the files of its local
    /// version, counted as `calculationMethod` says.
    ///
    /// This is different from the download size, which can be smaller. Read from the disk
    /// without basd; every file is looked at, so a pack of many files takes a while (the walk runs
    /// off the manager's actor). Links, FIFOs and devices below the pack are not followed or
    /// counted.
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` when no asset pack
    ///   with the specified ID is available locally; a `POSIXError` when a folder of the pack
    ///   cannot be read (`EOVERFLOW` when it holds more entries, or deeper, than a pack can).
    public func localSize(
        ofAssetPackWithID assetPackID: String, calculationMethod: SizeCalculationMethod
    ) async throws -> Int64 {
        let packs = LocalPacks(links: try connection.packsFolder())
        let result = await Task.detached { () -> Result<Int64, LocalPacks.SizeFailure> in
            do throws(LocalPacks.SizeFailure) {
                return .success(try packs.size(of: assetPackID, method: calculationMethod))
            } catch {
                return .failure(error)
            }
        }.value
        switch result {
        case .success(let size): return size
        case .failure(.notLocal): throw ManagedBackgroundAssetsError.assetPackNotFound(withID: assetPackID)
        case .failure(.overBound): throw POSIXError(.EOVERFLOW)
        case .failure(.unreadable(let code)): throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
    }
}
