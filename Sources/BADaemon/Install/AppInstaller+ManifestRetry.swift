import BADaemonProtocol
import Foundation

/// A content request whose manifest fetch failed, to be made again.
struct ManifestRetry: Sendable {
    var kind: ContentRequestKind
    /// Failed fetches in a row.
    var attempt = 0
    /// Which armed timer is current (a newer failure or a network change supersedes older ones).
    var generation = 0
    /// The last failure, and when the next try is due (for `ba apps`).
    var lastError = ""
    var nextTry = Date()

    /// "install: the manifest could not be fetched (…); tried 2 time(s), next at 2026-…Z".
    var summary: String {
        "\(kind.rawValue): the manifest could not be fetched (\(lastError)); tried \(attempt) time(s), next at "
            + LogFormat.timestamp(nextTry)
    }

    /// The wait after `attempt` failures: 5 s, doubling, at most an hour.
    static func delaySeconds(afterAttempt attempt: Int) -> Int {
        min(5 << min(max(attempt - 1, 0), 20), 3_600)
    }
}

// Failed manifest fetches, tried again by themselves (executor): an offline `ba install`, a CDN
// that was down for a periodic run.
extension AppInstaller {
    /// Records a failed fetch for `kind` and arms the next try; returns its delay in seconds.
    func manifestFailed(_ kind: ContentRequestKind, app: String, error: String = "") -> Int {
        var retry = manifestRetries[app] ?? ManifestRetry(kind: kind)
        // An install or update still owed outranks a periodic run.
        if retry.kind == .periodic { retry.kind = kind }
        retry.attempt += 1
        retry.generation += 1
        let delay = ManifestRetry.delaySeconds(afterAttempt: retry.attempt)
        retry.lastError = error
        retry.nextTry = clock.now.addingTimeInterval(TimeInterval(delay))
        manifestRetries[app] = retry
        let generation = retry.generation
        executor.after(.seconds(delay)) { [weak self] in self?.retryManifest(of: app, generation: generation) }
        return delay
    }

    /// The network changed: every content request waiting to fetch its manifest again tries now.
    func retryManifestsNow() {
        for (app, retry) in manifestRetries {
            manifestRetries[app]?.generation += 1
            retryManifest(of: app, generation: retry.generation + 1)
        }
    }

    private func retryManifest(of app: String, generation: Int) {
        guard let retry = manifestRetries[app], retry.generation == generation else { return }
        guard let stored = try? store.app(app) else {
            manifestRetries[app] = nil
            return
        }
        log("\(app): fetching its manifest again for \(retry.kind.rawValue) (after \(retry.attempt) failure(s))")
        let report = ExtensionRunReport(bundleIdentifier: stored.bundleIdentifier, version: stored.version)
        // Like the install or update it replaces, outside the daily runtime allowance; a periodic
        // run stays within it.
        callContentRequest(retry.kind, of: stored, bypassAllowance: retry.kind != .periodic, report: report) {
            [self] report in
            if report.manifestError == nil, report.event != nil {
                log("\(app): \(retry.kind.rawValue) done after its manifest could be fetched again")
            }
        }
    }
}

extension AppInstaller {
    /// What the installer has under way that basd must stay for (``IdleExit``): manifests to fetch
    /// again (their timers live in this basd only).
    var idleBlockers: [String] {
        manifestRetries.keys.sorted().map { "\($0)'s manifest is to be fetched again" }
    }
}
