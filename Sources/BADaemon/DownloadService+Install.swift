import BAAppBundle
import BADaemonProtocol
import BADownloadEngine
import BAExtensionHost
import BAExtensionProtocol
import BAStore
import Foundation

/// A `downloads(for:manifestURL:extensionInfo:)` content request.
enum ContentRequestKind: String, Sendable {
    case install, update, periodic, languageChange

    /// `BAContentRequest`'s raw value.
    var rawValue32: Int32 {
        switch self {
        case .install: 1
        case .update: 2
        case .periodic: 3
        case .languageChange: 4
        }
    }

    var runEvent: StoredExtensionRun.Event {
        switch self {
        case .install: .install
        case .update: .update
        case .periodic: .periodic
        case .languageChange: .languageChange
        }
    }
}

// Install, update, and the content-request calls they share with periodic runs and `ba simulate`
// (service queue).
extension DownloadService {
    /// `installApp`: reads the app's `Info.plist`, registers it, then (for an install or an
    /// update) fetches the manifest, calls the extension and schedules what it returns. `reply`
    /// gets the report once the call has ended (on the service queue).
    func install(_ request: InstallRequest, reply: @escaping @Sendable (ServerMessage.Result) -> Void) {
        let bundle: AppBundle
        do {
            bundle = try AppBundle.load(directory: request.appDirectory)
        } catch {
            reply(Refusal(.invalidApp, error.description).result)
            return
        }
        let previous: StoredApp?
        let app: StoredApp
        do {
            previous = try store.app(bundle.bundleIdentifier)
            switch request.mode {
            case .install where previous != nil:
                throw Refusal(
                    .invalidApp,
                    "\(bundle.bundleIdentifier) is already installed (version \(previous?.version ?? "?")); update it with `ba update`")
            case .update where previous == nil:
                throw Refusal(
                    .invalidApp, "\(bundle.bundleIdentifier) is not installed; install it first with `ba install`")
            default:
                break
            }
            _ = try register(
                AppRegistration(
                    bundleIdentifier: bundle.bundleIdentifier, version: bundle.version,
                    appGroupIdentifier: bundle.appGroupIdentifier, appDirectory: bundle.directory,
                    extensionPath: bundle.extensionPath),
                manifestURL: bundle.manifestURL,
                restrictions: StoredApp.Restrictions(
                    downloadAllowance: bundle.downloadAllowance,
                    essentialDownloadAllowance: bundle.essentialDownloadAllowance,
                    domainAllowList: bundle.domainAllowList, maxInstallSize: bundle.maxInstallSize,
                    essentialMaxInstallSize: bundle.essentialMaxInstallSize))
            guard let registered = try store.app(bundle.bundleIdentifier) else {
                throw Refusal(.internalError, "\(bundle.bundleIdentifier) vanished while being registered")
            }
            app = registered
        } catch let refusal as Refusal {
            reply(refusal.result)
            return
        } catch let error as BAStoreError {
            reply(Refusal(error).result)
            return
        } catch {
            reply(Refusal(.internalError, "installing \(bundle.bundleIdentifier) failed: \(error)").result)
            return
        }
        var report = ExtensionRunReport(
            bundleIdentifier: app.bundleIdentifier, version: app.version, previousVersion: previous?.version)
        let kind: ContentRequestKind
        switch request.mode {
        case .install: kind = .install
        case .update: kind = .update
        case .automatic:
            guard let previous else {
                kind = .install
                break
            }
            guard previous.version != app.version else {
                report.skipped = "version \(app.version) is already installed; `ba update` runs the update event anyway"
                reply(.extensionRun(report))
                return
            }
            kind = .update
        }
        // A one-off event the installer triggered: like `ba simulate`, outside the daily runtime
        // allowance (its runtime still counts) but under the per-call deadline. The switches,
        // quarantine and the rest are `refusalToCall`'s: the report says which.
        callContentRequest(kind, of: app, bypassAllowance: true, report: report) { reply(.extensionRun($0)) }
    }

    /// `simulate`: wakes the extension as if `event` had happened, outside the daily runtime
    /// allowance (as Apple's `backgroundassets-debug` does) but within the per-call deadline.
    func simulate(_ event: SimulatedEvent, app bundleIdentifier: String, reply: @escaping @Sendable (ServerMessage.Result) -> Void) throws {
        guard let app = try store.app(bundleIdentifier) else {
            throw Refusal(.callerConnectionNotAccepted, "app \(bundleIdentifier) is not registered with basd")
        }
        let kind: ContentRequestKind =
            switch event {
            case .install: .install
            case .update: .update
            case .periodic: .periodic
            case .languageChange: .languageChange
            }
        let report = ExtensionRunReport(bundleIdentifier: app.bundleIdentifier, version: app.version)
        callContentRequest(kind, of: app, bypassAllowance: true, report: report) { [self] report in
            // A simulated periodic run resets the schedule like any run.
            if kind == .periodic, report.event != nil { periodicRan(app.bundleIdentifier) }
            reply(.extensionRun(report))
        }
    }

    /// Registers (or re-registers) an app and prepares its container; returns the registration it replaced.
    @discardableResult
    func register(_ registration: AppRegistration, manifestURL: String?, restrictions: StoredApp.Restrictions) throws
        -> StoredApp?
    {
        if let violation = DownloadRules.checkIdentifier(registration.bundleIdentifier, what: "bundle identifier") {
            throw Refusal(ErrorCodes.downloadInvalid, violation.reason)
        }
        if let group = registration.appGroupIdentifier,
            let violation = DownloadRules.checkIdentifier(group, what: "app group identifier")
        {
            throw Refusal(ErrorCodes.downloadInvalid, violation.reason)
        }
        let previous = try store.register(
            StoredApp(
                bundleIdentifier: registration.bundleIdentifier, version: registration.version,
                appGroupIdentifier: registration.appGroupIdentifier, appDirectory: registration.appDirectory,
                extensionPath: registration.extensionPath, manifestURL: manifestURL, restrictions: restrictions))
        if let group = registration.appGroupIdentifier { try containers.prepare(group: group) }
        log("registered \(registration.bundleIdentifier) \(registration.version)")
        return previous
    }

    /// One `downloads(for:manifestURL:extensionInfo:)` call: gates (extension, switches,
    /// quarantine, runtime allowance), the manifest fetch, the call in a runner, then the returned
    /// downloads scheduled (essential first). `done` gets the report on the service queue.
    func callContentRequest(
        _ kind: ContentRequestKind, of app: StoredApp, bypassAllowance: Bool, report: ExtensionRunReport,
        done: @escaping @Sendable (ExtensionRunReport) -> Void
    ) {
        var report = report
        guard !extensionBusy.contains(app.bundleIdentifier) else {
            // One call at a time per app: this one starts when the current one ends.
            log("\(app.bundleIdentifier): \(kind.rawValue) waits for the extension's current call to end")
            waitingCalls[app.bundleIdentifier, default: []].append { [self] in
                let current = (try? store.app(app.bundleIdentifier)) ?? app
                callContentRequest(kind, of: current, bypassAllowance: bypassAllowance, report: report, done: done)
            }
            return
        }
        // Nothing to call is not a refusal: an app may come without an extension or a manifest.
        guard app.extensionPath != nil else {
            report.skipped = "the app has no extension (BAExtensionPath)"
            done(report)
            return
        }
        guard let manifestURL = app.manifestURL else {
            report.skipped = "the app's Info.plist has no BAManifestURL, so there is no manifest to hand the extension"
            done(report)
            return
        }
        if let reason = refusalToCall(app, kind: kind, bypassAllowance: bypassAllowance) {
            report.skipped = reason
            report.callRefused = true
            log("not calling the extension of \(app.bundleIdentifier) for \(kind.rawValue): \(reason)")
            done(report)
            return
        }
        // Busy from the manifest fetch on, so no other call (or event wake) starts meanwhile.
        extensionBusy.insert(app.bundleIdentifier)
        fetchManifest(manifestURL, for: app) { [self, report] outcome in
            var report = report
            switch outcome {
            case .failure(let failure):
                report.skipped = "the manifest could not be fetched: \(failure.message)"
                report.manifestError = failure.message
                log("\(app.bundleIdentifier): \(report.skipped ?? "")")
                done(report)
                extensionFreed(app.bundleIdentifier)
            case .success(let manifest):
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
        guard let libraryPath = app.extensionPath, let supervisor else {
            // `callContentRequest` checked both; a re-registration during the manifest fetch may
            // have dropped the extension. The call still ends: manifest gone, reply sent.
            unlink(manifestPath)
            var report = report
            report.skipped = "the app's extension went away while its manifest was fetched"
            report.callRefused = true
            log("\(app.bundleIdentifier) \(kind.rawValue): \(report.skipped ?? "")")
            done(report)
            extensionFreed(app.bundleIdentifier)
            return
        }
        let remaining = remainingAllowances(of: app)
        let invocation = BAExtensionInvocation(
            libraryPath: libraryPath,
            event: .contentRequest(
                request: kind.rawValue32, manifestPath: manifestPath, manifestURL: "file://" + manifestPath,
                restrictedRemaining: remaining.nonEssential ?? -1, restrictedEssentialRemaining: remaining.essential ?? -1
            ),
            timeout: callTimeout(for: app, bypassAllowance: bypassAllowance),
            appGroupContainerPath: app.appGroupIdentifier.map { containers.container(group: $0) },
            currentDownloads: (try? store.downloads(app: app.bundleIdentifier).filter { $0.state.isActive }.map(record))
                ?? [])
        let startedAt = Date()
        let thread = Thread { [self] in
            let outcome = Result<BAExtensionRunResult, BAExtensionHostError>(catching: {
                () throws(BAExtensionHostError) in try supervisor.runBlocking(invocation)
            })
            // The manifest is the call's alone: deleted as soon as it ends, whatever the outcome.
            unlink(manifestPath)
            queue.async {
                done(self.ran(kind, of: app, startedAt: startedAt, outcome: outcome, report: report))
                self.extensionFreed(app.bundleIdentifier)
            }
        }
        thread.name = "basd-extension-call"
        thread.start()
    }

    /// Records a content-request call and schedules what it returned.
    private func ran(
        _ kind: ContentRequestKind, of app: StoredApp, startedAt: Date,
        outcome: Result<BAExtensionRunResult, BAExtensionHostError>, report: ExtensionRunReport
    ) -> ExtensionRunReport {
        var report = report
        report.event = kind.rawValue
        var verdict: BAExtensionVerdict?
        switch outcome {
        case .success(let result):
            verdict = result.verdict
            report.verdict = result.verdict.name
            report.detail = result.verdict.detail
            report.durationMilliseconds = Self.milliseconds(result.duration)
            report.logs = result.logs.map(\.message)
            for line in result.logs { log("[\(app.bundleIdentifier) extension] \(line.message)") }
            report.refused = result.rejected.map {
                RefusedDownload(
                    identifier: $0.download.identifier, code: $0.code, reason: $0.reason,
                    isEssential: $0.download.isEssential)
            }
            if result.verdict == .ok {
                // Cancelled first (an `.update` dropping stale downloads), so a download returned
                // again under the same identifier is scheduled afresh.
                let cancelled = applyCancellations(result.cancelled, of: app.bundleIdentifier)
                if !cancelled.isEmpty { report.cancelled = cancelled }
                schedule(result.downloads, returnedBy: kind, of: app, into: &report)
            }
        case .failure(let error):
            report.verdict = "hostError"
            report.detail = error.message
        }
        _ = try? store.recordExtensionRun(
            StoredExtensionRun(
                appIdentifier: app.bundleIdentifier, event: kind.runEvent, verdict: report.verdict ?? "hostError",
                detail: report.detail, startedAt: startedAt, durationMilliseconds: report.durationMilliseconds ?? 0))
        extensionRan(app, verdict: verdict, hostError: report.verdict == "hostError" ? report.detail : nil,
            duration: TimeInterval(report.durationMilliseconds ?? 0) / 1000)
        log(
            "\(app.bundleIdentifier) \(kind.rawValue): extension \(report.verdict ?? "?"), \(report.scheduled.count) scheduled, "
                + "\(report.refused.count) refused")
        return report
    }

    /// Schedules an install/update/periodic call's downloads, essential first; before the app's
    /// first launch, those past `BAEssentialMaxInstallSize` / `BAMaxInstallSize` (the sizes one
    /// call may add) or refused by the other pre-launch restrictions are reported with their code.
    private func schedule(
        _ downloads: [DownloadRecord], returnedBy kind: ContentRequestKind, of app: StoredApp,
        into report: inout ExtensionRunReport
    ) {
        var essentialTotal: Int64 = 0
        var total: Int64 = 0
        let ordered = downloads.sorted { ($0.isEssential ? 0 : 1, $0.identifier) < ($1.isEssential ? 0 : 1, $1.identifier) }
        for record in ordered {
            let key = record.isEssential ? "BAEssentialMaxInstallSize" : "BAMaxInstallSize"
            let maximum = record.isEssential ? app.restrictions.essentialMaxInstallSize : app.restrictions.maxInstallSize
            let sum = (record.isEssential ? essentialTotal : total) + record.fileSize
            if !app.launched, let maximum, sum > maximum {
                report.refused.append(
                    RefusedDownload(
                        identifier: record.identifier, code: ErrorCodes.downloadWouldExceedAllowance,
                        reason: "\"\(record.identifier)\" (\(record.fileSize) bytes) would take the \(kind.rawValue)'s "
                            + "\(record.isEssential ? "essential " : "")downloads to \(sum) bytes, "
                            + "over \(key) (\(maximum))",
                        isEssential: record.isEssential))
                continue
            }
            let payload = DownloadPayload(
                identifier: record.identifier, uniqueIdentifier: record.uniqueIdentifier, url: record.url,
                headers: record.headers, applicationGroupIdentifier: record.applicationGroupIdentifier,
                priority: record.priority, isEssential: record.isEssential,
                fileSize: record.fileSize > 0 ? record.fileSize : nil, sha256: record.sha256)
            do {
                // Re-read: each scheduled download changes what is left of the allowance.
                let current = try store.app(app.bundleIdentifier) ?? app
                let stored = try schedule(payload, for: current, contentRequest: kind.rawValue32)
                if record.isEssential { essentialTotal = sum } else { total = sum }
                report.scheduled.append(info(stored))
            } catch {
                let refusal =
                    switch error {
                    case let refusal as Refusal: refusal
                    case let error as BAStoreError: Refusal(error)
                    default: Refusal(ErrorCodes.downloadInvalid, "\(error)")
                    }
                report.refused.append(
                    RefusedDownload(
                        identifier: record.identifier, code: refusal.code, reason: refusal.message,
                        isEssential: record.isEssential))
            }
        }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    // MARK: - Manifest

    /// A fetched manifest: a read-only file in basd's state directory.
    struct FetchedManifest: Sendable {
        var path: String
        var size: Int64
    }

    /// Where fetched manifests live while their call runs.
    var manifestsDirectory: String { configuration.stateDirectory + "/manifests" }

    /// Deletes what a basd that died mid-call left in the manifests folder (manifests and their
    /// partial files): a manifest belongs to one call, and no call survives a restart. Call at
    /// start, before serving.
    func removeLeftoverManifests() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: manifestsDirectory) else { return }
        for name in names {
            let path = manifestsDirectory + "/" + name
            // The engine's `.ba-partial` folder is a directory (removed whole: partial manifests
            // cannot be resumed by a call that no longer exists).
            do {
                try FileManager.default.removeItem(atPath: path)
                if name != ".ba-partial" { log("removed \(path), left by a call that did not end") }
            } catch {
                log("cannot remove \(path), left by a call that did not end: \(error.localizedDescription)")
            }
        }
    }

    /// Fetches `url` through the engine (at once, ahead of the queue) into a read-only file;
    /// before the app's first launch the fetch keeps to the allowance and the allow-list.
    func fetchManifest(
        _ url: String, for app: StoredApp, done: @escaping @Sendable (Result<FetchedManifest, ManifestFailure>) -> Void
    ) {
        let directory = manifestsDirectory
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            done(.failure(ManifestFailure("cannot create \(directory): \(error.localizedDescription)")))
            return
        }
        let id = "manifest:" + UUID().uuidString
        let destination = directory + "/" + app.bundleIdentifier + "-" + id.dropFirst("manifest:".count) + ".manifest"
        let remaining = remainingAllowances(of: app).nonEssential
        if let remaining, remaining <= 0 {
            done(
                .failure(
                    ManifestFailure(
                        "BADownloadAllowance is used up before the app's first launch (error 203)")))
            return
        }
        // The engine checks the URL (and the allow-list) before it connects, and every redirect hop.
        let allowList = app.launched ? nil : app.restrictions.domainAllowList
        manifestFetches[id] = { [self] event in
            switch event {
            case .finished(_, let path, let size, _, _):
                manifestFetches[id] = nil
                chmod(path, 0o444)
                done(.success(FetchedManifest(path: path, size: size)))
            case .failed(_, let error):
                manifestFetches[id] = nil
                unlink(destination)
                unlink(destination + ".partial")
                unlink(destination + ".partial.validator")
                let code = Self.failure(error)
                done(.failure(ManifestFailure("\(error.message) (\(code.domain) \(code.code))")))
            case .needsCredentials:
                engine.respond(to: id, with: .cancel)
            default:
                break
            }
        }
        engine.add(
            DownloadRequest(
                id: id, url: url, destination: destination, partialPath: destination + ".partial", byteLimit: remaining,
                priority: 1000, isEssential: true, isForeground: true, allowList: allowList.map(HostAllowList.init)))
    }

    struct ManifestFailure: Error, Sendable {
        var message: String
        init(_ message: String) { self.message = message }
    }
}
