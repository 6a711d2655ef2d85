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
public struct PurgeSummary: Codable, Sendable, Equatable {
    /// One tracked asset.
    public struct Asset: Codable, Sendable, Equatable {
        /// The app's bundle identifier.
        public var appID: String
        /// The download's identifier.
        public var identifier: String
        /// The download's unique identifier.
        public var downloadUniqueID: String
        /// Where the file is now; nil (absent in JSON) when it was not found.
        public var path: String?
        /// Its size now when found, else the recorded size.
        public var size: Int64
        /// ``AssetStatus/name``: `purgeable`, `modified`, `inUse`, `pendingDelivery` or `missing`.
        public var status: String
        /// Why it is deleted or kept, for a person.
        public var reason: String
        /// Whether the plan deletes it.
        public var wouldDelete: Bool

        /// Creates an asset line.
        public init(
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
    public var freeBytes: Int64
    /// ``PurgePlan/thresholdBytes``.
    public var thresholdBytes: Int64
    /// ``PurgePlan/bytesNeeded``.
    public var bytesNeeded: Int64
    /// ``PurgePlan/plannedBytes``.
    public var plannedBytes: Int64
    /// ``PurgePlan/purgeableBytes``.
    public var purgeableBytes: Int64
    /// ``PurgePlan/scanTruncated``.
    public var scanTruncated: Bool
    /// Every asset, in the plan's order.
    public var assets: [Asset]

    /// Summarizes a plan.
    public init(_ plan: PurgePlan) {
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
