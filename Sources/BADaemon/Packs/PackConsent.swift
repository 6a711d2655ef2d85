import BADaemonProtocol

/// Google Play's rule for large downloads on a metered network, joined with the background holds
/// into one policy for asset pack jobs, without I/O (table-tested in `PackConsentTests`).
///
/// - A job someone waits for (**urgent**: an install waiting for its essential packs, or a pack
///   the app asked for with `ensureLocalAvailability`, `ba packs ensure`, a repair) never waits
///   for the network or power: asking is consent.
/// - Any other job waits for what background transfers wait for (``NetworkConditions/backgroundHold(network:lowPowerMode:waitsWhenMetered:)``):
///   Low Power Mode, a metered network when `waitOnMeteredNetwork` is on (the default),
///   no or captive or limited connectivity.
/// - And, whatever `waitOnMeteredNetwork` says, a job whose pack is **not essential** and that
///   has more than `meteredPackConsentBytes` (default 200 MB) to fetch waits while the network is
///   metered: it **needs consent** (``needsConsent(_:threshold:)``). Its chunk fetches are made
///   with `allowsMeteredNetwork` off, so the engine parks them while the network is metered
///   (a running one stops keeping its bytes and goes on with `Range` once it is not).
///
/// The bytes weighed are the plan's: what the job still has to fetch once its index is read and
/// planned against the local version (a delta for an update). The index itself (bounded by
/// `PackLimits.maximumIndexBytes`) is fetched first, metered or not. An index that needs more
/// than the signed manifest's `downloadSize` is refused, so a manifest that gives a small size
/// for a large pack never lets the large pack through.
enum PackConsent {
    /// What the rule needs of a job.
    struct Job: Sendable, Hashable {
        /// The pack's policy is essential.
        var essentialPolicy: Bool
        /// An install waits for it, or the app asked for it (consent).
        var urgent: Bool
        /// The bytes it still has to fetch by its plan (nil: not planned yet).
        var bytesToFetch: Int64?
    }

    /// Whether the job may fetch on a metered network only with consent: neither essential nor
    /// urgent, and more than `threshold` bytes to fetch (a negative threshold counts as 0). A job
    /// not planned yet fetches only its index, which needs no consent.
    static func needsConsent(_ job: Job, threshold: Int64) -> Bool {
        guard !job.essentialPolicy, !job.urgent, let bytes = job.bytesToFetch else { return false }
        return bytes > max(0, threshold)
    }

    /// Why the job waits now, or nil when it may fetch: `backgroundHold` is what holds background
    /// transfers now (nil: nothing).
    static func hold(
        of job: Job, backgroundHold: NetworkConditions.Hold?, metered: Bool, threshold: Int64
    ) -> NetworkConditions.Hold? {
        guard !job.urgent else { return nil }
        if let backgroundHold { return backgroundHold }
        return metered && needsConsent(job, threshold: threshold) ? .meteredNetwork : nil
    }
}

/// What a pack will fetch from the network and write to disk if it is ensured now
/// (``PackInfo/fetchBytes``, ``PackInfo/writeBytes``), without I/O (table-tested in `PackConsentTests`).
enum PackSizes {
    /// What is known of the pack.
    struct Known: Sendable, Hashable {
        var localVersion: Int?
        /// The manifest's version and `downloadSize` (nil: no longer listed).
        var serverVersion: Int?
        var manifestDownloadSize: Int64?
        /// A job for the server version: its index once read (stored bytes of its distinct
        /// chunks, bytes of its files), and its plan once made.
        var index: IndexSizes?
        var plan: Plan?
    }

    /// A job's index, once read: the stored bytes of its distinct chunks, the bytes of its files.
    struct IndexSizes: Sendable, Hashable {
        var downloadSize: Int64
        var fileBytes: Int64
    }

    /// A job's plan, and how far it got.
    struct Plan: Sendable, Hashable {
        var bytesToFetch: Int64
        var bytesFetched: Int64
        var bytesTotal: Int64
        var bytesPresent: Int64
    }

    /// `fetch`, `write`: nil when not known.
    /// - Not listed: nil, nil. Current and no job: 0, 0.
    /// - Planned: what the plan still fetches (compressed) and what staging still lacks (the
    ///   version's file bytes not yet there: reused chunks are copied, unchanged files linked).
    /// - Index read, not planned: its download size (an update's delta is at most that) and its
    ///   files' bytes.
    /// - Otherwise (no job yet, or its index not read): the manifest's `downloadSize` (at most
    ///   what it fetches: the index may need no more), and write unknown.
    static func sizes(_ known: Known) -> (fetch: Int64?, write: Int64?) {
        guard let server = known.serverVersion else { return (nil, nil) }
        if let plan = known.plan {
            return (
                max(0, plan.bytesToFetch.subtractingSaturated(plan.bytesFetched)),
                max(0, plan.bytesTotal.subtractingSaturated(plan.bytesPresent))
            )
        }
        if let index = known.index { return (max(0, index.downloadSize), max(0, index.fileBytes)) }
        if known.localVersion == server { return (0, 0) }
        return (known.manifestDownloadSize.map { max(0, $0) }, nil)
    }

    /// The sum of `values`, Int64.max when it overflows (a hostile index's sizes).
    static func saturatingSum(_ values: some Sequence<Int64>) -> Int64 {
        var total: Int64 = 0
        for value in values {
            let (sum, overflow) = total.addingReportingOverflow(value)
            if overflow { return value > 0 ? .max : .min }
            total = sum
        }
        return total
    }
}

extension Int64 {
    /// `self - other`, clamped to Int64's range.
    fileprivate func subtractingSaturated(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other > 0 ? .min : .max) : difference
    }
}
