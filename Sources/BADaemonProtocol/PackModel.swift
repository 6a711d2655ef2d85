/// Apple's asset-pack status flags (the bit values of `BAAssetPackStatus`, as
/// `AssetPack.Status` has them), and `failed`, basd's: what a listing says of a pack. On the wire
/// the flags' names joined by `,` (`"downloaded,upToDate"`), as protocol version 1 always sent them.
package struct PackStatus: OptionSet, Sendable, Hashable, Codable, CustomStringConvertible {
    package let rawValue: Int
    package init(rawValue: Int) { self.rawValue = rawValue }

    package static let downloadAvailable = PackStatus(rawValue: 1 << 0)
    package static let updateAvailable = PackStatus(rawValue: 1 << 1)
    package static let upToDate = PackStatus(rawValue: 1 << 2)
    package static let outOfDate = PackStatus(rawValue: 1 << 3)
    package static let obsolete = PackStatus(rawValue: 1 << 4)
    package static let downloading = PackStatus(rawValue: 1 << 5)
    package static let downloaded = PackStatus(rawValue: 1 << 6)
    /// The last attempt failed (not Apple's: its failures reach the app as errors).
    package static let failed = PackStatus(rawValue: 1 << 16)

    /// Each flag and its name on the wire, in the order a listing writes them.
    package static let names: [(PackStatus, String)] = [
        (.downloaded, "downloaded"), (.obsolete, "obsolete"), (.upToDate, "upToDate"), (.outOfDate, "outOfDate"),
        (.downloadAvailable, "downloadAvailable"), (.updateAvailable, "updateAvailable"),
        (.downloading, "downloading"), (.failed, "failed"),
    ]

    /// The names joined by `,`.
    package var description: String { Self.names.filter { contains($0.0) }.map(\.1).joined(separator: ",") }

    /// The flags named in `words` (`,`-separated); an unknown name is left out.
    package init(words: String) {
        var status: PackStatus = []
        for word in words.split(separator: ",") {
            if let flag = Self.names.first(where: { $0.1 == word }) { status.insert(flag.0) }
        }
        self = status
    }

    package init(from decoder: any Decoder) throws {
        self.init(words: try decoder.singleValueContainer().decode(String.self))
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// When a pack is downloaded: Apple's three policies, by their manifest names.
package enum PackPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    case essential, prefetch, onDemand
}

/// What a pack (or download) that should be under way waits for. A name on the wire; typed here,
/// and open to names a newer basd adds (a client shows them as they are).
package struct WaitingReason: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    package let rawValue: String
    package init(rawValue: String) { self.rawValue = rawValue }

    /// Free disk space (the version's bytes, or a full disk mid-way).
    package static let space = WaitingReason(rawValue: "space")
    /// Low Power Mode holds background work.
    package static let lowPowerMode = WaitingReason(rawValue: "lowPowerMode")
    /// A metered network holds background work.
    package static let meteredNetwork = WaitingReason(rawValue: "meteredNetwork")
    /// NetworkManager's connectivity.
    package static let offline = WaitingReason(rawValue: "offline")
    package static let captivePortal = WaitingReason(rawValue: "captivePortal")
    package static let limitedConnectivity = WaitingReason(rawValue: "limitedConnectivity")
    /// The background concurrency: its files wait for a slot.
    package static let queue = WaitingReason(rawValue: "queue")
    /// Its server gives no answer (refused, unreachable, cut before answering): it goes on at
    /// the server's first answer, which basd tries for one request at a time.
    package static let server = WaitingReason(rawValue: "server")

    package var description: String { rawValue }

    package init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// Why a pack could not be made local: what a user or publisher can act on, and the protocol's
/// error code when it has one (`docs/protocol.md`, "Errors": 1102 refused metadata, 1110 a parked
/// job, …), and for a failed call on the device, its errno and the call (or the check that
/// refused: `chunkLength`, …), so that no code reads the message to tell a full disk from a bad
/// chunk. `cancelled` is the app's own cancellation.
package struct PackFailure: Error, Sendable, Hashable, CustomStringConvertible {
    package var message: String
    package var code: Int?
    /// The errno of the call that failed (`ENOSPC` 28, …), when one did.
    package var errno: Int32?
    /// The syscall that failed (`pwrite`, …) or the check that refused.
    package var operation: String?

    package init(_ message: String, code: Int? = nil, errno: Int32? = nil, operation: String? = nil) {
        self.message = message
        self.code = code
        self.errno = errno
        self.operation = operation
    }

    /// The app cancelled the download (its `Progress`).
    package static let cancelled = PackFailure("cancelled")
    package var isCancellation: Bool { self == .cancelled }
    package var description: String { message }
}
