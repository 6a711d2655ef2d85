import Foundation

/// What a tracked asset is now, and so whether it may be purged.
///
/// Only ``purgeable(path:size:lastUsed:)`` may be deleted; every other case is kept.
package enum AssetStatus: Sendable, Equatable {
    /// No file with the asset's device and inode is in the containers walked: the app deleted it,
    /// moved it out of its app group container, or copied it (a copy has a new inode) and deleted
    /// the original. When the walk was truncated it may also just not have been reached.
    case missing
    /// The file is there but its size or modification time differs from the record: the app
    /// changed it. Never purged.
    case modified(Modification)
    /// Some process has the file open or mapped (pids ascending). Never purged while so.
    case inUse(pids: [Int32])
    /// The file is still inside the container's internal `.background-assets` folder (its delivery
    /// path): basd still owes the app this file. Never purged.
    case pendingDelivery(path: String)
    /// Delivered and unmodified, but the app has not launched since (``LaunchHold``): it may need
    /// the file to start and has not had the chance to fetch it again. Kept until it launches.
    case awaitingLaunch(path: String, hold: LaunchHold)
    /// Unmodified, unused, delivered: may be deleted under disk pressure.
    ///
    /// `lastUsed` is the later of the file's access time and when the download finished. Access
    /// times are coarse: with the usual `relatime` mount option the kernel updates them at most
    /// once a day, and with `noatime` never, so `lastUsed` is then when the download finished.
    case purgeable(path: String, size: Int64, lastUsed: Date)

    /// How a file differs from its record.
    package struct Modification: Sendable, Equatable, Codable, CustomStringConvertible {
        /// The size recorded at delivery.
        package var recordedSize: Int64
        /// The size now.
        package var size: Int64
        /// The modification time recorded at delivery, in nanoseconds since 1970.
        package var recordedModificationTimeNanoseconds: Int64
        /// The modification time now, in nanoseconds since 1970.
        package var modificationTimeNanoseconds: Int64

        /// Creates a modification.
        package init(
            recordedSize: Int64, size: Int64, recordedModificationTimeNanoseconds: Int64,
            modificationTimeNanoseconds: Int64
        ) {
            self.recordedSize = recordedSize
            self.size = size
            self.recordedModificationTimeNanoseconds = recordedModificationTimeNanoseconds
            self.modificationTimeNanoseconds = modificationTimeNanoseconds
        }

        /// "size 10 → 12", or "modification time 2026-11-20T10:15:00Z → 2026-11-21T08:00:00Z" when
        /// only that changed.
        package var description: String {
            if size != recordedSize { return "size \(recordedSize) → \(size)" }
            let before = PurgeDates.timestamp(nanoseconds: recordedModificationTimeNanoseconds)
            let after = PurgeDates.timestamp(nanoseconds: modificationTimeNanoseconds)
            return "modification time \(before) → \(after)"
        }
    }

    /// The path the file is at now, when it was found.
    package var path: String? {
        switch self {
        case .purgeable(let path, _, _), .pendingDelivery(let path), .awaitingLaunch(let path, _): path
        case .missing, .modified, .inUse: nil
        }
    }

    /// A short name for the case, as ``PurgeSummary`` prints it: `purgeable`, `modified`, `inUse`,
    /// `pendingDelivery`, `awaitingLaunch`, `missing`.
    package var name: String {
        switch self {
        case .missing: "missing"
        case .modified: "modified"
        case .inUse: "inUse"
        case .pendingDelivery: "pendingDelivery"
        case .awaitingLaunch: "awaitingLaunch"
        case .purgeable: "purgeable"
        }
    }
}

/// UTC dates for reasons a person reads.
enum PurgeDates {
    /// "2026-11-20".
    static func day(_ date: Date) -> String { format(date, [.withFullDate]) }

    /// "2026-11-20T10:15:00Z".
    static func timestamp(nanoseconds: Int64) -> String {
        format(date(nanoseconds: nanoseconds), [.withInternetDateTime])
    }

    static func date(nanoseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(nanoseconds) / 1_000_000_000)
    }

    private static func format(_ date: Date, _ options: ISO8601DateFormatter.Options) -> String {
        // A formatter per call: they are not Sendable, and reasons are made a few hundred at a time.
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = options
        return formatter.string(from: date)
    }
}
