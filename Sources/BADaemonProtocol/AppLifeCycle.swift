/// What `ba install` / `ba update` asks: basd reads the app directory's `Info.plist` itself.
package struct InstallRequest: Sendable, Hashable, Codable {
    /// Which content request the extension gets.
    package enum Mode: String, Sendable, Hashable, Codable {
        /// `.install` for a new app, `.update` for a registered one whose version changed; a
        /// registered app of the same version is re-registered and its extension not run.
        case automatic
        /// `.install` (refused for a registered app).
        case install
        /// `.update` (refused for an app that is not registered).
        case update
    }

    /// The app directory, absolute.
    package var appDirectory: String
    package var mode: Mode

    package init(appDirectory: String, mode: Mode = .automatic) {
        self.appDirectory = appDirectory
        self.mode = mode
    }
}

/// A download an extension returned that basd refused, with Apple's error code.
package struct RefusedDownload: Sendable, Hashable, Codable {
    package var identifier: String
    package var code: Int
    package var reason: String
    /// Whether the extension returned it as essential (nil from a basd that did not say): a
    /// refused essential download fails `ba install`.
    package var isEssential: Bool?

    package init(identifier: String, code: Int, reason: String, isEssential: Bool? = nil) {
        self.identifier = identifier
        self.code = code
        self.reason = reason
        self.isEssential = isEssential
    }
}

/// The outcome of an install, update or simulated event: the registration, the extension call
/// and the downloads it led to.
package struct ExtensionRunReport: Sendable, Hashable, Codable {
    package var bundleIdentifier: String
    package var version: String
    /// The version registered before an install or update, if any.
    package var previousVersion: String?
    /// `install`, `update` or `periodic`; nil when the extension was not called.
    package var event: String?
    /// Why the extension was not called (no extension, in-app content off, quarantined, …).
    package var skipped: String?
    /// True when the app has an extension and a manifest but basd would not call it now (a user
    /// switch, quarantine, no runner): `skipped` says why. `ba install` then fails; an app
    /// without an extension or manifest URL, or the same version again, is not refused.
    package var callRefused: Bool?
    /// The call's verdict (`ok`, `timedOut`, `crashed`, …) and detail.
    package var verdict: String?
    package var detail: String?
    package var durationMilliseconds: Int64?
    /// Bytes of the manifest fetched for the call (counted against the allowance before launch).
    package var manifestBytes: Int64?
    /// Why the manifest could not be fetched (the extension was then not called).
    package var manifestError: String?
    /// Why the app's asset packs could not be started (its download manifest could not be
    /// fetched, verified or read); nil when it has none or all is well.
    package var packProblem: String?
    /// The app gets asset packs (`BAHasManagedAssetPacks`): `ba install` waits for the essential ones.
    package var hasPacks: Bool?
    /// The essential packs of this install's or update's event (less those the extension
    /// declined): what `ba install` waits for and names.
    package var essentialPacks: [String]?
    /// The downloads scheduled: essential ones first.
    package var scheduled: [DownloadInfo]
    /// The downloads refused, with Apple's codes (109, 112, 202, …).
    package var refused: [RefusedDownload]
    /// The identifiers of the app's downloads the extension cancelled during the call (nil when none).
    package var cancelled: [String]?
    /// What the extension logged.
    package var logs: [String]

    package init(
        bundleIdentifier: String, version: String, previousVersion: String? = nil, event: String? = nil,
        skipped: String? = nil, verdict: String? = nil, detail: String? = nil, durationMilliseconds: Int64? = nil,
        manifestBytes: Int64? = nil, scheduled: [DownloadInfo] = [], refused: [RefusedDownload] = [],
        logs: [String] = []
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.version = version
        self.previousVersion = previousVersion
        self.event = event
        self.skipped = skipped
        self.verdict = verdict
        self.detail = detail
        self.durationMilliseconds = durationMilliseconds
        self.manifestBytes = manifestBytes
        self.scheduled = scheduled
        self.refused = refused
        self.logs = logs
    }
}

/// One extension call, as `ba apps` shows it.
package struct ExtensionRunInfo: Sendable, Hashable, Codable {
    package var event: String
    package var verdict: String
    package var detail: String?
    /// Seconds since the epoch.
    package var startedAt: Double
    package var durationMilliseconds: Int64

    package init(event: String, verdict: String, detail: String?, startedAt: Double, durationMilliseconds: Int64) {
        self.event = event
        self.verdict = verdict
        self.detail = detail
        self.startedAt = startedAt
        self.durationMilliseconds = durationMilliseconds
    }
}

/// A registered app, as `ba apps` shows it.
package struct AppInfo: Sendable, Hashable, Codable {
    package var bundleIdentifier: String
    package var version: String
    package var appGroupIdentifier: String?
    package var appDirectory: String
    package var extensionPath: String?
    package var launched: Bool
    /// Bytes left of `BADownloadAllowance` / `BAEssentialDownloadAllowance` (nil: no limit, or launched).
    package var downloadAllowanceRemaining: Int64?
    package var essentialDownloadAllowanceRemaining: Int64?
    /// Seconds of extension runtime left in the current daily window.
    package var runtimeRemainingSeconds: Double?
    /// Seconds since the epoch of the next periodic run, if one is scheduled.
    package var nextPeriodicRun: Double?
    /// Why the extension is quarantined, if it is.
    package var quarantine: String?
    /// The last extension calls, newest first.
    package var lastRuns: [ExtensionRunInfo]
    /// A content request whose manifest could not be fetched, waiting to be tried again: what
    /// failed and when basd tries again.
    package var manifestRetry: String?
    /// What is wrong with the app's asset-pack signing: an update removed `BAAssetPackPublicKey`.
    package var packKeyWarning: String?

    package init(
        bundleIdentifier: String, version: String, appGroupIdentifier: String?, appDirectory: String,
        extensionPath: String?, launched: Bool, downloadAllowanceRemaining: Int64?,
        essentialDownloadAllowanceRemaining: Int64?, runtimeRemainingSeconds: Double?, nextPeriodicRun: Double?,
        quarantine: String?, lastRuns: [ExtensionRunInfo]
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.version = version
        self.appGroupIdentifier = appGroupIdentifier
        self.appDirectory = appDirectory
        self.extensionPath = extensionPath
        self.launched = launched
        self.downloadAllowanceRemaining = downloadAllowanceRemaining
        self.essentialDownloadAllowanceRemaining = essentialDownloadAllowanceRemaining
        self.runtimeRemainingSeconds = runtimeRemainingSeconds
        self.nextPeriodicRun = nextPeriodicRun
        self.quarantine = quarantine
        self.lastRuns = lastRuns
    }
}

/// One finished file in a purge plan.
package struct PurgeEntry: Sendable, Hashable, Codable {
    package var appIdentifier: String
    package var identifier: String
    package var path: String?
    package var size: Int64
    /// `purgeable`, `modified`, `inUse`, `pendingDelivery`, `awaitingLaunch` or `missing`.
    package var status: String
    package var reason: String
    package var wouldDelete: Bool

    package init(
        appIdentifier: String, identifier: String, path: String?, size: Int64, status: String, reason: String,
        wouldDelete: Bool
    ) {
        self.appIdentifier = appIdentifier
        self.identifier = identifier
        self.path = path
        self.size = size
        self.status = status
        self.reason = reason
        self.wouldDelete = wouldDelete
    }
}

/// What basd would purge (or purged) to get free space back over its threshold.
package struct PurgeReport: Sendable, Hashable, Codable {
    package var freeBytes: Int64
    package var thresholdBytes: Int64
    package var dryRun: Bool
    package var entries: [PurgeEntry]
    /// Bytes deleted (or that would be).
    package var bytesFreed: Int64

    package init(freeBytes: Int64, thresholdBytes: Int64, dryRun: Bool, entries: [PurgeEntry], bytesFreed: Int64) {
        self.freeBytes = freeBytes
        self.thresholdBytes = thresholdBytes
        self.dryRun = dryRun
        self.entries = entries
        self.bytesFreed = bytesFreed
    }
}
