import BACore

/// A `packs` request (`ba packs …`, and an app's `AssetPackManager`): what to do with an app's
/// asset packs. An app's connection acts on its own app only (`app` is ignored), and may `list`,
/// `ensure`, `remove`, `check`, `follow` and `cancel`.
///
/// On the wire: `{"id": 7, "type": "packs", "packs": {"action": "ensure", "app": "…", "pack": "…"}}`.
/// Answered with ``ServerMessage/Result/packs(_:)``: the packs concerned, as they stand after the
/// action was taken (an `ensure` answers once the pack's download has started or it is local; the
/// client follows it in the listing or in pack events).
package struct PackCommand: Sendable, Hashable, Codable {
    /// What to do.
    package enum Action: String, Sendable, Hashable, Codable, CaseIterable {
        /// List packs (of `app`, or of every app).
        case list
        /// Make `pack` local: download it if it is not (`requireLatest`: also update it if the
        /// server lists a newer version).
        case ensure
        /// Remove `pack`'s files; it stays listed, to download again on request.
        case remove
        /// Read every local file of `app`'s packs against its index (`repair`: download again
        /// what does not match).
        case verify
        /// Read `app`'s download manifest again and update what changed (what a periodic run does).
        case check
        /// Send this connection `app`'s pack events (``PackEvent``) from now on (`AssetPackManager`'s
        /// status updates).
        case follow
        /// Stop downloading `pack` (an app cancelled its `Progress`): the download ends with a
        /// `failed` event saying so; what is verified in staging is kept for the next attempt.
        case cancel
    }

    package var action: Action
    package var app: String?
    package var pack: String?
    package var requireLatest: Bool?
    package var repair: Bool?

    package init(
        action: Action, app: String? = nil, pack: String? = nil, requireLatest: Bool? = nil, repair: Bool? = nil
    ) {
        self.action = action
        self.app = app
        self.pack = pack
        self.requireLatest = requireLatest
        self.repair = repair
    }
}

/// The answer to a `packs` request.
package struct PackReport: Sendable, Hashable, Codable {
    /// The packs concerned, by app then pack id.
    package var packs: [PackInfo]
    /// What `verify` found wrong, one line each (empty when all is well).
    package var problems: [String]

    package init(packs: [PackInfo], problems: [String] = []) {
        self.packs = packs
        self.problems = problems
    }
}

/// One asset pack of one app, as basd knows it.
package struct PackInfo: Sendable, Hashable, Codable {
    package var appIdentifier: String
    /// `assetPackID`.
    package var assetPackID: String
    /// `essential`, `prefetch` or `onDemand` (the manifest's policy).
    package var policy: String?
    /// The version whose files are at ``path`` (nil: none is local).
    package var localVersion: Int?
    /// The newest version the download manifest lists (nil: no longer listed).
    package var serverVersion: Int?
    /// Apple's status words, joined by `,`: `downloadAvailable` (not local), `downloading`,
    /// `downloaded` (local), `upToDate` / `outOfDate` (local, against the server), `obsolete`
    /// (local, no longer listed); `failed` when the last attempt failed.
    package var status: String
    /// The stored bytes of the server version's chunks (what a first download fetches at most).
    package var downloadSize: Int64?
    /// While downloading: the version being assembled, and its bytes present of all.
    package var targetVersion: Int?
    package var bytesPresent: Int64?
    package var bytesTotal: Int64?
    /// While downloading: compressed bytes fetched so far and to fetch in all, and bytes taken
    /// from the local version instead of fetched.
    package var bytesFetched: Int64?
    package var bytesToFetch: Int64?
    package var bytesReused: Int64?
    /// Why a pack that should download is not downloading now: `space`, `lowPowerMode`,
    /// `meteredNetwork`, `offline`, `captivePortal`, `limitedConnectivity`, or `queue` (a prefetch
    /// or background pack whose files all wait for the background concurrency; no place is given:
    /// pack files go to the engine directly, not through the download queue).
    package var waitingFor: String?
    /// The last failure, said so a user can act on it.
    package var error: String?
    /// While downloading: an install waits for it (an essential pack of the install's event, or
    /// a requested one).
    package var essential: Bool?
    /// Where the local version's files are (`CONTAINER/AssetPacks/ID`).
    package var path: String?
    /// True when the app's extension declined the pack for the last install or update
    /// (`ManagedDownloaderExtension.shouldDownload(_:)`) and it is not local: it is not downloaded
    /// until the app asks for it (`ensureLocalAvailability`, `ba packs ensure`). Nil otherwise.
    package var declined: Bool?
    /// The manifest's `userInfo` for the server version, as JSON text.
    package var userInfo: String?
    /// The error code of ``error`` (`docs/protocol.md`, "Errors": 1102 refused metadata, 1110 a
    /// parked job, …); nil when it has none.
    package var errorCode: Int?

    package init(appIdentifier: String, assetPackID: String, status: String) {
        self.appIdentifier = appIdentifier
        self.assetPackID = assetPackID
        self.status = status
    }

    /// The words of ``status``.
    package var statusWords: Set<Substring> { Set(status.split(separator: ",")) }

    /// basd is downloading it now (``status`` has `downloading`).
    package var isDownloading: Bool { statusWords.contains("downloading") }
}

/// Something that happened to an asset pack (CLI observers, `ba events --follow`; an app's
/// connection that asked to `follow`). Not kept: ``PackInfo`` in a listing says where a pack stands.
package struct PackEvent: Sendable, Hashable, Codable {
    /// `began` (also: going on after a pause), `progress`, `paused` (waiting, e.g. for disk space),
    /// `finished`, `failed`, `removed`, `obsolete`.
    package var kind: String
    package var appIdentifier: String
    package var assetPackID: String
    package var version: Int?
    package var bytesPresent: Int64?
    package var bytesTotal: Int64?
    package var bytesFetched: Int64?
    package var bytesReused: Int64?
    package var message: String?
    /// The version's download size and the manifest's `userInfo` (JSON text), while downloading.
    package var downloadSize: Int64?
    package var userInfo: String?
    /// Why it is paused (`space`, `lowPowerMode`, `meteredNetwork`, `offline`, `captivePortal`,
    /// `limitedConnectivity`).
    package var waitingFor: String?
    /// For `failed`: the error code of ``message`` (`docs/protocol.md`, "Errors"), if it has one.
    package var errorCode: Int?

    package init(kind: String, appIdentifier: String, assetPackID: String, version: Int? = nil) {
        self.kind = kind
        self.appIdentifier = appIdentifier
        self.assetPackID = assetPackID
        self.version = version
    }
}
