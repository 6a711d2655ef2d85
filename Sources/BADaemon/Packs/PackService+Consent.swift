import BADaemonProtocol
import BAPacks

// Consent on a metered network (``PackConsent``) and the sizes a listing shows before a pack
// starts (``PackSizes``), on the executor.

/// What the pack service reads of the network and the settings for ``PackConsent``.
protocol PackConsentConditions: AnyObject {
    /// NetworkManager says the network is metered now.
    var networkMetered: Bool { get }
    /// The `meteredPackConsentBytes` setting in force.
    var meteredPackConsentBytes: Int64 { get }
}

extension TransferCoordinator: PackConsentConditions {
    var networkMetered: Bool { network.metered }
    var meteredPackConsentBytes: Int64 { settings().meteredPackConsentBytes }
}

extension PackService {
    /// The network and settings, when the transfers say them (basd's own always do); else not
    /// metered, and nothing needs consent.
    private var consentConditions: (metered: Bool, threshold: Int64) {
        guard let conditions = transfers as? any PackConsentConditions else { return (false, .max) }
        return (conditions.networkMetered, conditions.meteredPackConsentBytes)
    }

    /// The job as ``PackConsent`` weighs it.
    func consentJob(_ job: PackJob) -> PackConsent.Job {
        PackConsent.Job(
            essentialPolicy: Self.policy(job.entry.downloadPolicy) == .essential, urgent: job.essential,
            bytesToFetch: job.bytesToFetch)
    }

    /// Whether `job`'s fetches may use a metered network: not when it needs consent.
    func fetchesAllowMetered(_ job: PackJob) -> Bool {
        !PackConsent.needsConsent(consentJob(job), threshold: consentConditions.threshold)
    }

    /// Whether `job` waits for consent now: it needs it and the network is metered.
    func waitsForConsent(_ job: PackJob) -> Bool {
        let conditions = consentConditions
        return conditions.metered && PackConsent.needsConsent(consentJob(job), threshold: conditions.threshold)
    }

    /// Tells `job`'s followers that it waits for consent (`paused`, `meteredNetwork`), or goes on
    /// (`began`), once per change; no event while something else holds it (which says so itself).
    func consentChanged(_ job: PackJob) {
        let waits = waitsForConsent(job)
        guard waits != job.consentPaused else { return }
        job.consentPaused = waits
        let heldOtherwise =
            job.waitingFor != nil || job.waitingForServer || (!job.essential && transfers.backgroundHold != nil)
        if waits {
            log(
                "asset pack \(job.key): \(job.bytesToFetch ?? 0) bytes to fetch, more than meteredPackConsentBytes (\(consentConditions.threshold)), on a metered network: it waits until the network is not metered or the app asks for it"
            )
            guard !heldOtherwise else { return }
            job.consentPauseSent = true
            send(
                PackEvent(
                    .paused(.meteredNetwork), appIdentifier: job.key.app, assetPackID: job.key.pack,
                    version: job.entry.version))
        } else {
            log("asset pack \(job.key): the network is not metered (or consent was given); going on")
            let told = job.consentPauseSent
            job.consentPauseSent = false
            guard told, !heldOtherwise else { return }
            send(PackEvent(.began, appIdentifier: job.key.app, assetPackID: job.key.pack, version: job.entry.version))
        }
    }

    /// The event of a job when the background hold ends: `began`, or `paused` (`meteredNetwork`)
    /// when it still waits for consent (its followers are then told `began` when that ends).
    func afterBackgroundHold(_ job: PackJob) -> PackEvent.Kind {
        guard job.consentPaused, !job.waitingForServer else { return .began }
        job.consentPauseSent = true
        return .paused(.meteredNetwork)
    }

    /// The network turned metered, or not: each job that needs consent waits, or goes on (the
    /// engine parks or releases its fetches).
    func meteredChanged() {
        for job in jobs.values.sorted(by: { $0.key.description < $1.key.description }) where !job.machine.phase.isOver {
            consentChanged(job)
        }
    }

    /// Whether a request for `job` (not urgent yet) starts it again as an urgent one: its fetches
    /// in flight were made as background ones, which wait in the background queue and for the
    /// holds (a metered network, Low Power Mode); the new job resumes from what is verified in
    /// staging. A job not fetching yet only becomes urgent (its fetches are made so).
    func restartsWhenUrgent(_ job: PackJob) -> Bool {
        !job.essential && !job.fetchIDs.isEmpty
    }

    /// What `job` waits for in a listing because of the network or power (``PackConsent/hold(of:backgroundHold:metered:threshold:)``),
    /// after its own waits (space).
    func networkWait(_ job: PackJob) -> WaitingReason? {
        let conditions = consentConditions
        return PackConsent.hold(
            of: consentJob(job), backgroundHold: transfers.backgroundHold, metered: conditions.metered,
            threshold: conditions.threshold
        ).map(WaitingReason.init)
    }

    /// The listing's ``PackInfo/fetchBytes`` and ``PackInfo/writeBytes`` of `row`.
    func fillSizes(_ info: inout PackInfo, row: PackRow, job: PackJob?) {
        var known = PackSizes.Known(
            localVersion: row.localVersion, serverVersion: row.entry?.version,
            manifestDownloadSize: row.entry?.downloadSize)
        if let job, job.entry.version == row.entry?.version {
            if let index = job.index {
                known.index = PackSizes.IndexSizes(
                    downloadSize: index.downloadSize, fileBytes: PackSizes.saturatingSum(index.files.map(\.size)))
            }
            if let toFetch = job.bytesToFetch, let total = job.bytesTotal {
                known.plan = PackSizes.Plan(
                    bytesToFetch: toFetch, bytesFetched: job.bytesFetched, bytesTotal: total,
                    bytesPresent: job.bytesPresent ?? 0)
            }
        }
        let sizes = PackSizes.sizes(known)
        info.fetchBytes = sizes.fetch
        info.writeBytes = sizes.write
    }
}
