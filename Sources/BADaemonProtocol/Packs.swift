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
        /// Point `app`'s download manifest at `url` (a loopback test server, `ba pack serve`)
        /// instead of its `BAManifestURL`, until an `override` without `url` clears it; kept by
        /// basd across restarts. The user's (`ba packs override`), never an app's.
        case override
        /// Set (`language`) or clear (no `language`) the app's own language for its localized
        /// packs (`AssetPackManager.resolvedLanguage`); kept across restarts. Nothing is
        /// downloaded or removed until `reconcileLanguages`.
        case setLanguage
        /// Put the app's localized packs in line with its language (`reconcilePreferredLanguages()`):
        /// `preferredLanguages`, when given, replace the preferred languages basd keeps for the app
        /// (else basd's environment's). Answers once the chosen language's packs are local and
        /// the other languages' packs removed (or one failed: then nothing was removed).
        case reconcileLanguages
    }

    package var action: Action
    package var app: String?
    package var pack: String?
    package var requireLatest: Bool?
    package var repair: Bool?
    /// For `override`: the download manifest URL to use (nil: clear the override).
    package var url: String?
    /// `setLanguage`: the BCP-47 tag (nil: clear).
    package var language: String?
    /// `reconcileLanguages`: the app's preferred languages, most preferred first (BCP-47).
    package var preferredLanguages: [String]?

    package init(
        action: Action, app: String? = nil, pack: String? = nil, requireLatest: Bool? = nil, repair: Bool? = nil,
        url: String? = nil, language: String? = nil, preferredLanguages: [String]? = nil
    ) {
        self.language = language
        self.preferredLanguages = preferredLanguages
        self.action = action
        self.app = app
        self.pack = pack
        self.requireLatest = requireLatest
        self.repair = repair
        self.url = url
    }
}

/// The answer to a `packs` request.
package struct PackReport: Sendable, Hashable, Codable {
    /// The packs concerned, by app then pack id.
    package var packs: [PackInfo]
    /// What `verify` found wrong, one line each (empty when all is well).
    package var problems: [String]
    /// The apps whose download manifest the user pointed elsewhere (`ba packs override`), by
    /// app: the URL basd reads instead of `BAManifestURL`. Given by `list` and `override`; nil
    /// when none is set (or from a basd without overrides).
    package var overrides: [String: String]?
    /// For one app's listing: the language basd chose for its localized packs (nil: it has
    /// none), and the languages its localized packs are available in.
    package var resolvedLanguage: String?
    package var availableLanguages: [String]?

    package init(packs: [PackInfo], problems: [String] = [], overrides: [String: String]? = nil) {
        self.packs = packs
        self.problems = problems
        self.overrides = overrides
    }
}

/// One asset pack of one app, as basd knows it.
package struct PackInfo: Sendable, Hashable, Codable {
    package var appIdentifier: String
    /// `assetPackID`.
    package var assetPackID: String
    /// The manifest's policy.
    package var policy: PackPolicy?
    /// The version whose files are at ``path`` (nil: none is local).
    package var localVersion: Int?
    /// The newest version the download manifest lists (nil: no longer listed).
    package var serverVersion: Int?
    /// Apple's status flags: `downloadAvailable` (not local), `downloading`, `downloaded` (local),
    /// `upToDate` / `outOfDate` (local, against the server), `obsolete` (local, no longer listed);
    /// `failed` when the last attempt failed. On the wire, their names joined by `,`.
    package var status: PackStatus
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
    package var waitingFor: WaitingReason?
    /// With `waitingFor` `server`: the last failure to reach it (`http://…: Couldn't connect to
    /// server`), and when basd tries it next (seconds since 1970).
    package var waitingError: String?
    package var nextAttemptAt: Double?
    /// The last failure, said so a user can act on it.
    package var error: String?
    /// While downloading: the pack's policy is essential and the download is fetched at once (an
    /// install waits for it). Never true for a prefetch or on-demand pack (see ``requested``).
    package var essential: Bool?
    /// While downloading: a pack whose policy is not essential that the app (or `ba packs ensure`,
    /// a repair) asked for, so it is fetched at once as an essential one is. Nil otherwise.
    package var requested: Bool?
    /// Where the local version's files are (`CONTAINER/AssetPacks/ID`).
    package var path: String?
    /// True when the app's extension declined the pack for the last install or update
    /// (`ManagedDownloaderExtension.shouldDownload(_:)`) and it is not local: it is not downloaded
    /// until the app asks for it (`ensureLocalAvailability`, `ba packs ensure`). Nil otherwise.
    package var declined: Bool?
    /// The manifest's `userInfo` for the server version, as JSON text.
    package var userInfo: String?
    /// The BCP-47 language the server version is localized for; nil when it is not localized
    /// (or no longer listed).
    package var language: String?
    /// The error code of ``error`` (`docs/protocol.md`, "Errors": 1102 refused metadata, 1110 a
    /// parked job, …); nil when it has none.
    package var errorCode: Int?
    /// What the pack will fetch from the network (compressed bytes) and write to disk if it is
    /// ensured now, known before it starts (`docs/packs.md`, "Size before fetching"): 0 for a
    /// current pack; the manifest's `downloadSize` (at most what it fetches) until basd has read
    /// the version's index; then the index's figures, and once planned against the local
    /// version, what the plan still fetches and writes (an update's delta). `writeBytes` is nil
    /// until the index is read. Both nil for a pack no longer listed.
    package var fetchBytes: Int64?
    package var writeBytes: Int64?

    package init(appIdentifier: String, assetPackID: String, status: PackStatus) {
        self.appIdentifier = appIdentifier
        self.assetPackID = assetPackID
        self.status = status
    }

    /// basd is downloading it now (``status`` has `downloading`).
    package var isDownloading: Bool { status.contains(.downloading) }
}

/// Something that happened to an asset pack (CLI observers, `ba events --follow`; an app's
/// connection that asked to `follow`). Not kept: ``PackInfo`` in a listing says where a pack stands.
///
/// On the wire (protocol version 1): `kind` is the case's name, with `waitingFor` for `paused`
/// (and for `server`, `waitingError` and `nextAttemptAt`) and `message` and `errorCode` for `failed`.
package struct PackEvent: Sendable, Hashable, Codable {
    /// What happened.
    package enum Kind: Sendable, Hashable {
        /// It started, or goes on after a pause (Apple's `DownloadStatusUpdate.began`).
        case began
        /// It waits, for the reason given.
        case paused(WaitingReason)
        /// Bytes arrived (``bytesPresent`` of ``bytesTotal``).
        case progress
        /// The version is local.
        case finished
        /// It stopped: why (an app's cancellation is ``PackFailure/cancelled``).
        case failed(PackFailure)
        /// Its files were removed (`ba packs remove`, `AssetPackManager.remove`).
        case removed
        /// The manifest no longer lists it: its local version was removed.
        case obsolete

        /// The case's name, as the wire's `kind`.
        package var name: String {
            switch self {
            case .began: "began"
            case .paused: "paused"
            case .progress: "progress"
            case .finished: "finished"
            case .failed: "failed"
            case .removed: "removed"
            case .obsolete: "obsolete"
            }
        }

        /// Whether the download ended (finished or failed).
        package var ends: Bool {
            switch self {
            case .finished, .failed: true
            default: false
            }
        }
    }

    package var kind: Kind
    package var appIdentifier: String
    package var assetPackID: String
    package var version: Int?
    package var bytesPresent: Int64?
    package var bytesTotal: Int64?
    package var bytesFetched: Int64?
    package var bytesReused: Int64?
    /// The version's download size and the manifest's `userInfo` (JSON text), while downloading.
    package var downloadSize: Int64?
    package var userInfo: String?
    /// With `paused` for `server`: the last failure to reach it, and when basd tries it next
    /// (seconds since 1970).
    package var waitingError: String?
    package var nextAttemptAt: Double?

    package init(_ kind: Kind, appIdentifier: String, assetPackID: String, version: Int? = nil) {
        self.kind = kind
        self.appIdentifier = appIdentifier
        self.assetPackID = assetPackID
        self.version = version
    }

    /// Why it paused, for `paused`.
    package var waitingFor: WaitingReason? {
        if case .paused(let reason) = kind { return reason }
        return nil
    }

    /// Why it failed, for `failed`.
    package var failure: PackFailure? {
        if case .failed(let failure) = kind { return failure }
        return nil
    }

    private enum CodingKeys: String, CodingKey {
        case kind, appIdentifier, assetPackID, version, bytesPresent, bytesTotal, bytesFetched, bytesReused,
            message, downloadSize, userInfo, waitingFor, errorCode, errno, operation, waitingError, nextAttemptAt
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(String.self, forKey: .kind)
        switch name {
        case "began": kind = .began
        case "paused":
            kind = .paused(
                try container.decodeIfPresent(WaitingReason.self, forKey: .waitingFor) ?? .init(rawValue: ""))
        case "progress": kind = .progress
        case "finished": kind = .finished
        case "failed":
            kind = .failed(
                PackFailure(
                    try container.decodeIfPresent(String.self, forKey: .message) ?? "the download failed",
                    code: try container.decodeIfPresent(Int.self, forKey: .errorCode),
                    errno: try container.decodeIfPresent(Int32.self, forKey: .errno),
                    operation: try container.decodeIfPresent(String.self, forKey: .operation)))
        case "removed": kind = .removed
        case "obsolete": kind = .obsolete
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .kind, in: container, debugDescription: "unknown pack event kind \"\(name)\"")
        }
        appIdentifier = try container.decode(String.self, forKey: .appIdentifier)
        assetPackID = try container.decode(String.self, forKey: .assetPackID)
        version = try container.decodeIfPresent(Int.self, forKey: .version)
        bytesPresent = try container.decodeIfPresent(Int64.self, forKey: .bytesPresent)
        bytesTotal = try container.decodeIfPresent(Int64.self, forKey: .bytesTotal)
        bytesFetched = try container.decodeIfPresent(Int64.self, forKey: .bytesFetched)
        bytesReused = try container.decodeIfPresent(Int64.self, forKey: .bytesReused)
        downloadSize = try container.decodeIfPresent(Int64.self, forKey: .downloadSize)
        userInfo = try container.decodeIfPresent(String.self, forKey: .userInfo)
        waitingError = try container.decodeIfPresent(String.self, forKey: .waitingError)
        nextAttemptAt = try container.decodeIfPresent(Double.self, forKey: .nextAttemptAt)
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind.name, forKey: .kind)
        try container.encode(appIdentifier, forKey: .appIdentifier)
        try container.encode(assetPackID, forKey: .assetPackID)
        try container.encodeIfPresent(version, forKey: .version)
        try container.encodeIfPresent(bytesPresent, forKey: .bytesPresent)
        try container.encodeIfPresent(bytesTotal, forKey: .bytesTotal)
        try container.encodeIfPresent(bytesFetched, forKey: .bytesFetched)
        try container.encodeIfPresent(bytesReused, forKey: .bytesReused)
        try container.encodeIfPresent(downloadSize, forKey: .downloadSize)
        try container.encodeIfPresent(userInfo, forKey: .userInfo)
        try container.encodeIfPresent(waitingError, forKey: .waitingError)
        try container.encodeIfPresent(nextAttemptAt, forKey: .nextAttemptAt)
        switch kind {
        case .paused(let reason): try container.encode(reason, forKey: .waitingFor)
        case .failed(let failure):
            try container.encode(failure.message, forKey: .message)
            try container.encodeIfPresent(failure.code, forKey: .errorCode)
            try container.encodeIfPresent(failure.errno, forKey: .errno)
            try container.encodeIfPresent(failure.operation, forKey: .operation)
        default: break
        }
    }
}
