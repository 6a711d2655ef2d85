import BACore
import BADaemonProtocol
import BAExtensionHost
import BAStore
import Foundation

// Content-request calls: install, update, periodic and simulated ones (executor).
extension AppInstaller {
    /// One `downloads(for:manifestURL:extensionInfo:)` call, made when the app's extension is
    /// free: gates (extension, switches, quarantine, runtime allowance), the manifest fetch, the
    /// call in a runner, then the returned downloads scheduled (essential first). `done` gets the
    /// report on the executor; the extension is free again right after.
    func callContentRequest(
        _ kind: ContentRequestKind, of app: StoredApp, bypassAllowance: Bool, report: ExtensionRunReport,
        done: @escaping @Sendable (ExtensionRunReport) -> Void
    ) {
        let bundleIdentifier = app.bundleIdentifier
        delivery.requestExtension(for: bundleIdentifier, what: kind.rawValue) { [self] callID in
            // Read again: the app may have been re-registered, or uninstalled, while this call waited.
            guard let current = try? store.app(bundleIdentifier) else {
                var report = report
                report.skipped = "\(bundleIdentifier) was uninstalled"
                report.callRefused = true
                done(report)
                delivery.contentCallEnded(callID, app: bundleIdentifier)
                return
            }
            startContentRequest(kind, of: current, bypassAllowance: bypassAllowance, report: report) { [self] report in
                done(report)
                delivery.contentCallEnded(callID, app: bundleIdentifier)
            }
        }
    }

    private func startContentRequest(
        _ kind: ContentRequestKind, of app: StoredApp, bypassAllowance: Bool, report: ExtensionRunReport,
        done: @escaping @Sendable (ExtensionRunReport) -> Void
    ) {
        var report = report
        // Nothing to call is not a refusal: an app may come without an extension or a manifest.
        guard let libraryPath = app.extensionPath else {
            report.skipped = "the app has no extension (BAExtensionPath)"
            done(report)
            return
        }
        // A library that is not there is not the extension's failure (no quarantine): say what to fix.
        if access(libraryPath, F_OK) != 0 {
            report.skipped =
                "its extension library \(libraryPath) does not exist (BAExtensionPath in \(app.appDirectory)/Info.plist); "
                + "put it back, or fix the key, then run `ba update \(app.appDirectory)`"
            report.callRefused = true
            log("\(app.bundleIdentifier) \(kind.rawValue): \(report.skipped ?? "")")
            done(report)
            return
        }
        guard let manifestURL = app.manifestURL else {
            report.skipped = "the app's Info.plist has no BAManifestURL, so there is no manifest to hand the extension"
            done(report)
            return
        }
        if let reason = delegate?.installer(self, refusalToCall: app, kind: kind, bypassAllowance: bypassAllowance) {
            report.skipped = reason
            report.callRefused = true
            log("not calling the extension of \(app.bundleIdentifier) for \(kind.rawValue): \(reason)")
            done(report)
            return
        }
        transfers.fetchManifest(manifestURL, for: app) { [self, report] outcome in
            var report = report
            switch outcome {
            case .failure(let failure):
                let delay = manifestFailed(kind, app: app.bundleIdentifier, error: failure.message)
                report.skipped =
                    "the manifest could not be fetched from \(manifestURL) (BAManifestURL in "
                    + "\(app.appDirectory)/Info.plist): \(failure.message); basd tries again in \(delay) s by itself "
                    + "(sooner when the network changes)"
                report.manifestError = failure.message
                log("\(app.bundleIdentifier): \(report.skipped ?? "")")
                done(report)
            case .success(let manifest):
                manifestRetries[app.bundleIdentifier] = nil
                report.manifestBytes = manifest.size
                var current = app
                if !app.launched {
                    do {
                        // Apple counts the manifest against the allowance too.
                        try store.chargeAllowance(app: app.bundleIdentifier, bytes: manifest.size)
                        current = try store.app(app.bundleIdentifier) ?? app
                    } catch {
                        log("charging the manifest of \(app.bundleIdentifier) to its allowance failed: \(error)")
                    }
                }
                run(
                    kind, of: current, manifestPath: manifest.path, bypassAllowance: bypassAllowance, report: report,
                    done: done)
            }
        }
    }

    private func run(
        _ kind: ContentRequestKind, of app: StoredApp, manifestPath: String, bypassAllowance: Bool,
        report: ExtensionRunReport,
        done: @escaping @Sendable (ExtensionRunReport) -> Void
    ) {
        guard let libraryPath = app.extensionPath else {
            // A re-registration during the manifest fetch may have dropped the extension. The
            // call still ends: manifest gone, reply sent.
            unlink(manifestPath)
            var report = report
            report.skipped = "the app's extension went away while its manifest was fetched"
            report.callRefused = true
            log("\(app.bundleIdentifier) \(kind.rawValue): \(report.skipped ?? "")")
            done(report)
            return
        }
        let remaining = transfers.remainingAllowances(of: app)
        let event = RunnerEvent.contentRequest(
            request: kind.rawValue32, manifestPath: manifestPath, manifestURL: "file://" + manifestPath,
            restrictedRemaining: remaining.nonEssential ?? -1, restrictedEssentialRemaining: remaining.essential ?? -1)
        extensions.call(
            app, libraryPath: libraryPath, event: event, moreEvents: [], kind: kind.runEvent,
            bypassAllowance: bypassAllowance,
            // The manifest is the call's alone: deleted as soon as it ends, whatever the outcome.
            cleanup: { unlink(manifestPath) }, callsEnded: nil, countsTowardQuarantine: nil
        ) { [self] outcome in
            ran(kind, of: app, outcome: outcome, report: report, done: done)
        }
    }

    /// Reports a content-request call and schedules what it returned (in slices, over several
    /// turns of the executor); `done` gets the report once the last slice is stored.
    private func ran(
        _ kind: ContentRequestKind, of app: StoredApp, outcome: ExtensionCallOutcome, report: ExtensionRunReport,
        done: @escaping @Sendable (ExtensionRunReport) -> Void
    ) {
        var report = report
        report.event = kind.rawValue
        report.verdict = outcome.verdictName
        report.detail = outcome.detail
        if case .ran(let result) = outcome {
            report.durationMilliseconds = outcome.durationMilliseconds
            report.logs = result.logs.map(\.message)
            report.refused = result.rejected.map {
                RefusedDownload(
                    identifier: $0.download.identifier, code: $0.code, reason: $0.reason,
                    isEssential: $0.download.isEssential)
            }
            if result.verdict == .ok {
                // Cancelled first (an `.update` dropping stale downloads), so a download returned
                // again under the same identifier is scheduled afresh.
                let cancelled = transfers.applyCancellations(result.cancelled, of: app.bundleIdentifier)
                if !cancelled.isEmpty { report.cancelled = cancelled }
                let ordered = result.downloads.sorted {
                    ($0.isEssential ? 0 : 1, $0.identifier) < ($1.isEssential ? 0 : 1, $1.identifier)
                }
                var slices = ScheduleSlices(ordered: ordered)
                scheduleSlice(&slices, returnedBy: kind, of: app, into: &report)
                guard slices.isDone else {
                    continueScheduling(slices, returnedBy: kind, of: app, report: report, done: done)
                    return
                }
            }
        }
        endRan(kind, of: app, report: report, done: done)
    }

    private func endRan(
        _ kind: ContentRequestKind, of app: StoredApp, report: ExtensionRunReport,
        done: @escaping @Sendable (ExtensionRunReport) -> Void
    ) {
        log(
            "\(app.bundleIdentifier) \(kind.rawValue): extension \(report.verdict ?? "?"), \(report.scheduled.count) scheduled, "
                + "\(report.refused.count) refused")
        done(report)
    }

    /// The next slice in a later turn of the executor: requests of other clients that came
    /// meanwhile are served in between (issue 19: 10,000 downloads scheduled in one turn held
    /// every other client for seconds).
    private func continueScheduling(
        _ slices: ScheduleSlices, returnedBy kind: ContentRequestKind, of app: StoredApp, report: ExtensionRunReport,
        done: @escaping @Sendable (ExtensionRunReport) -> Void
    ) {
        let state = UncheckedSendable((slices, report))
        executor.yielding { [self] in
            var (slices, report) = state.value
            scheduleSlice(&slices, returnedBy: kind, of: app, into: &report)
            if slices.isDone {
                endRan(kind, of: app, report: report, done: done)
            } else {
                continueScheduling(slices, returnedBy: kind, of: app, report: report, done: done)
            }
        }
    }

    /// Schedules the next slice of an install/update/periodic call's downloads (essential first,
    /// across slices); before the app's first launch, those past `BAEssentialMaxInstallSize` /
    /// `BAMaxInstallSize` (the sizes one call may add) or refused by the other pre-launch
    /// restrictions are reported with their code.
    private func scheduleSlice(
        _ slices: inout ScheduleSlices, returnedBy kind: ContentRequestKind, of app: StoredApp,
        into report: inout ExtensionRunReport
    ) {
        // One transaction per slice (one fsync for up to ``ScheduleSlices/maximumCount``
        // downloads); the engine gets them once it is committed, and the report says nothing
        // before that.
        var stored: [StoredDownload] = []
        let reportedBefore = report.scheduled.count
        var essentialTotal = slices.essentialTotal
        var total = slices.total
        slices.startSlice()
        do {
            try store.batch("scheduling the downloads \(app.bundleIdentifier)'s extension returned") {
                schedule(
                    &slices, returnedBy: kind, of: app, essentialTotal: &essentialTotal, total: &total,
                    stored: &stored, into: &report)
            }
            // Only a committed slice counts toward the call's install sizes.
            slices.essentialTotal = essentialTotal
            slices.total = total
        } catch {
            // Nothing of the batch is stored: what it scheduled is refused, with the store's reason.
            let lost = report.scheduled[reportedBefore...].filter { info in
                stored.contains { $0.uniqueIdentifier == info.uniqueIdentifier }
            }
            report.scheduled.removeAll { info in stored.contains { $0.uniqueIdentifier == info.uniqueIdentifier } }
            let refusal = Refusal(error)
            report.refused += lost.map {
                RefusedDownload(
                    identifier: $0.download.identifier, code: refusal.code, reason: refusal.message,
                    isEssential: $0.download.isEssential)
            }
            stored = []
        }
        for download in stored { transfers.start(download) }
    }

    /// The body of ``scheduleSlice(_:returnedBy:of:into:)``, inside its batch.
    private func schedule(
        _ slices: inout ScheduleSlices, returnedBy kind: ContentRequestKind, of app: StoredApp,
        essentialTotal: inout Int64, total: inout Int64, stored newlyStored: inout [StoredDownload],
        into report: inout ExtensionRunReport
    ) {
        while let record = slices.take() {
            let key = record.isEssential ? "BAEssentialMaxInstallSize" : "BAMaxInstallSize"
            let maximum =
                record.isEssential ? app.restrictions.essentialMaxInstallSize : app.restrictions.maxInstallSize
            let sum = (record.isEssential ? essentialTotal : total) + record.fileSize
            if !app.launched, let maximum, sum > maximum {
                report.refused.append(
                    RefusedDownload(
                        identifier: record.identifier, code: AppleErrorCode.downloadWouldExceedAllowance.rawValue,
                        reason: "\"\(record.identifier)\" (\(record.fileSize) bytes) would take the \(kind.rawValue)'s "
                            + "\(record.isEssential ? "essential " : "")downloads to \(sum) bytes, "
                            + "over \(key) (\(maximum))",
                        isEssential: record.isEssential))
                continue
            }
            do {
                // Re-read: each scheduled download changes what is left of the allowance.
                let current = try store.app(app.bundleIdentifier) ?? app
                let stored = try transfers.schedule(
                    record, for: current, contentRequest: kind.rawValue32, start: false)
                newlyStored.append(stored)
                if record.isEssential { essentialTotal = sum } else { total = sum }
                report.scheduled.append(transfers.info(stored))
            } catch {
                let refusal =
                    switch error {
                    case let refusal as Refusal: refusal
                    case let error as BAStoreError: Refusal(error)
                    default: Refusal(AppleErrorCode.downloadInvalid.rawValue, "\(error)")
                    }
                // An essential download of the same identifier still active (a re-run `ba install`
                // while the first one's download retries): adopted, so the installer waits for it.
                if refusal.code == AppleErrorCode.downloadAlreadyScheduled.rawValue, record.isEssential,
                    let existing = try? store.activeDownloads(app: app.bundleIdentifier).first(where: {
                        $0.identifier == record.identifier && $0.state.isActive && $0.isEssential
                    })
                {
                    log(
                        "\(app.bundleIdentifier): essential \"\(record.identifier)\" is already scheduled; "
                            + "waiting for it")
                    report.scheduled.append(transfers.info(existing))
                    continue
                }
                report.refused.append(
                    RefusedDownload(
                        identifier: record.identifier, code: refusal.code, reason: refusal.message,
                        isEssential: record.isEssential))
            }
        }
    }

}

/// The downloads a content-request call returned, scheduled a slice at a time: each slice is one
/// transaction in one turn of the executor, at most ``maximumCount`` downloads and about
/// ``budget`` of work, so no other client waits long behind a set of 10,000.
struct ScheduleSlices {
    /// Most downloads in one slice.
    static let maximumCount = 500
    /// About how long one slice may hold the executor (checked between downloads; its commit
    /// comes after). A download takes about 0.5 ms in a debug build under load: read between
    /// every one, the clock keeps a slice near its budget (every 16th let slices run to 45 ms).
    static let budget = TurnSize.defaultTarget

    let ordered: [DownloadDescription]
    /// Where the next slice starts.
    private(set) var position = 0
    /// The sizes scheduled so far (the pre-launch install sizes are the whole call's).
    var essentialTotal: Int64 = 0
    var total: Int64 = 0
    /// Slices started so far.
    private(set) var count = 0
    /// Downloads taken in the current slice, and when it started.
    private var taken = 0
    private var sliceStarted = ContinuousClock.now

    init(ordered: [DownloadDescription]) { self.ordered = ordered }

    var isDone: Bool { position >= ordered.count }

    /// Starts the next slice.
    mutating func startSlice() {
        count += 1
        taken = 0
        sliceStarted = .now
    }

    /// The next download of the current slice; nil once the slice is full (``maximumCount``
    /// downloads, or ``budget`` spent) or the set is done.
    mutating func take() -> DownloadDescription? {
        guard position < ordered.count, taken < Self.maximumCount else { return nil }
        if taken > 0, ContinuousClock.now - sliceStarted >= Self.budget { return nil }
        taken += 1
        position += 1
        return ordered[position - 1]
    }
}
