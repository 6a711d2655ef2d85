import Foundation

/// A ``PurgePlan`` as plain values, for `ba purge --dry-run --json` (basd sends it over its socket).
///
/// ```json
/// {"freeBytes": 524288000, "thresholdBytes": 1073741824, "bytesNeeded": 549453824,
///  "plannedBytes": 600000000, "purgeableBytes": 900000000, "scanTruncated": false,
///  "assets": [{"appID": "com.example.game", "identifier": "level-1", "downloadUniqueID": "…",
///              "path": "/var/lib/basd/groups/group.com.example/levels/1.pak", "size": 600000000,
///              "status": "purgeable", "wouldDelete": true,
///              "reason": "purgeable: unmodified since it finished 2026-11-20, last used 2026-11-21"}]}
/// ```
package struct PurgeSummary: Codable, Sendable, Equatable {
    /// One tracked asset.
    package struct Asset: Codable, Sendable, Equatable {
        /// The app's bundle identifier.
        package var appID: String
        /// The download's identifier.
        package var identifier: String
        /// The download's unique identifier.
        package var downloadUniqueID: String
        /// Where the file is now; nil (absent in JSON) when it was not found.
        package var path: String?
        /// Its size now when found, else the recorded size.
        package var size: Int64
        /// ``AssetStatus/name``: `purgeable`, `modified`, `inUse`, `pendingDelivery`, `awaitingLaunch` or `missing`.
        package var status: String
        /// Why it is deleted or kept, for a person.
        package var reason: String
        /// Whether the plan deletes it.
        package var wouldDelete: Bool

        /// Creates an asset line.
        package init(
            appID: String, identifier: String, downloadUniqueID: String, path: String?, size: Int64, status: String,
            reason: String, wouldDelete: Bool
        ) {
            self.appID = appID
            self.identifier = identifier
            self.downloadUniqueID = downloadUniqueID
            self.path = path
            self.size = size
            self.status = status
            self.reason = reason
            self.wouldDelete = wouldDelete
        }
    }

    /// ``PurgePlan/freeBytes``.
    package var freeBytes: Int64
    /// ``PurgePlan/thresholdBytes``.
    package var thresholdBytes: Int64
    /// ``PurgePlan/bytesNeeded``.
    package var bytesNeeded: Int64
    /// ``PurgePlan/plannedBytes``.
    package var plannedBytes: Int64
    /// ``PurgePlan/purgeableBytes``.
    package var purgeableBytes: Int64
    /// ``PurgePlan/scanTruncated``.
    package var scanTruncated: Bool
    /// Every asset, in the plan's order.
    package var assets: [Asset]

    /// Summarizes a plan.
    package init(_ plan: PurgePlan) {
        freeBytes = plan.freeBytes
        thresholdBytes = plan.thresholdBytes
        bytesNeeded = plan.bytesNeeded
        plannedBytes = plan.plannedBytes
        purgeableBytes = plan.purgeableBytes
        scanTruncated = plan.scanTruncated
        assets = plan.entries.map { entry in
            Asset(
                appID: entry.asset.appID, identifier: entry.asset.identifier,
                downloadUniqueID: entry.asset.downloadUniqueID, path: entry.path, size: entry.size,
                status: entry.status.name, reason: entry.reason, wouldDelete: entry.willDelete)
        }
    }
}
