/// The life cycle of one transfer, without I/O: the engine feeds it what happened and applies
/// the action it returns.
///
/// ```
/// queued ──start──▶ running ──verified──▶ finished
///    ▲                 │ ├─retryable──▶ waitingForRetry ──due──▶ running
///    │                 │ ├─needsCredentials──▶ waitingForCredentials ──credential──▶ running
///    └────promote──── paused ◀──pause──┘ └─fatal / budget spent──▶ failed
/// ```
package struct TransferStateMachine: Sendable {
    package enum State: Equatable, Sendable {
        case queued
        case running
        /// Until this engine-clock time.
        case waitingForRetry(until: Duration)
        case waitingForCredentials
        case paused
        case finished
        case failed(DownloadError)
        case cancelled
    }

    /// What the engine should do next.
    package enum Action: Equatable, Sendable {
        /// Send a request for `url` from byte `offset` (0 = whole file), with `If-Range: validator`.
        case startRequest(url: String, offset: Int64, validator: String?)
        /// Wait until the engine-clock time, then call ``retryDue()``.
        case waitUntil(Duration, attempt: Int, reason: String)
        /// Ask the owner for credentials.
        case askForCredentials(challenge: String)
        /// Verify and move the partial file into place.
        case verifyAndFinish
        /// Report the failure (the partial file is kept for a later resume unless it is useless).
        case fail(DownloadError)
        case none
    }

    /// How a request ended, as the engine saw it.
    package enum Outcome: Equatable, Sendable {
        /// The body was written completely (or the 416 said the partial file is complete).
        case complete
        case redirect(location: String, resolved: String?)
        case retryable(reason: String, retryAfter: Duration?, isConnectivity: Bool)
        case restartWithoutRange(reason: String)
        case needsCredentials(challenge: String)
        case fatal(DownloadError)
    }

    package private(set) var state: State = .queued
    /// Requests started so far.
    package private(set) var attempts = 0
    /// The URL after redirects.
    package private(set) var currentURL: String
    package private(set) var redirectCount = 0
    package private(set) var restartCount = 0
    /// Whether credentials were already sent (a second 401 then fails).
    package private(set) var credentialsSent = false
    package private(set) var isForeground: Bool
    private var firstFailure: Duration?
    /// Requests that failed because the host could not be reached (offline): they do not count
    /// toward giving up.
    package private(set) var offlineAttempts = 0
    private let originalURL: String
    private var allowList: HostAllowList?
    /// The machine's own allow-list (basd's `allowedHosts`): checked with ``allowList`` and never lifted.
    private let allowedHosts: HostAllowList?
    /// The bytes are fixed by the owner (``DownloadRequest/sink``): a request resumes from
    /// `bytesOnDisk` with no validator (the owner checks what lands).
    package let contentAddressed: Bool

    package static let maximumRedirects = 10
    package static let maximumRestarts = 3

    /// A transfer of `url`; every hop must satisfy both `allowedHosts` (the machine's, kept for the
    /// transfer's life) and `allowList` (the app's pre-launch list, dropped by ``liftAllowList()``).
    /// With `contentAddressed`, every request resumes from what is kept, validator or not.
    package init(
        url: String, isForeground: Bool, allowList: HostAllowList?, allowedHosts: HostAllowList? = nil,
        contentAddressed: Bool = false
    ) {
        self.contentAddressed = contentAddressed
        self.currentURL = url
        self.originalURL = url
        self.isForeground = isForeground
        self.allowList = allowList
        self.allowedHosts = allowedHosts
    }

    /// The lists a hop must satisfy, the machine's first (its refusal is the one named).
    private var allowLists: [HostAllowList] { [allowedHosts, allowList].compactMap { $0 } }

    /// Starts (or resumes) a request with `bytesOnDisk` already in the partial file, whose
    /// version is `validator` (nil: unknown, so the partial file cannot be trusted).
    package mutating func start(bytesOnDisk: Int64, validator: String?) -> Action {
        switch state {
        case .queued, .paused, .waitingForRetry, .waitingForCredentials, .running: break
        case .finished, .failed, .cancelled: return .none
        }
        if attempts == 0, let reason = URLPolicy.check(currentURL, allowLists: allowLists) {
            return fail(DownloadError(.notAllowed, "\(currentURL): \(reason)"))
        }
        state = .running
        attempts += 1
        return resumeRequest(url: currentURL, bytesOnDisk: bytesOnDisk, validator: validator)
    }

    /// Ends a wait for a retry now (a promotion, `ba retry`, a network change): true when the
    /// transfer was waiting and may start at once.
    package mutating func retryNow() -> Bool {
        guard case .waitingForRetry = state else { return false }
        state = .queued
        return true
    }

    /// The owner promoted the transfer to the foreground (it fails fast from now on).
    package mutating func promote() { isForeground = true }

    /// The owner lifted the app's host allow-list: later redirect hops are checked against the URL rules
    /// and the machine's `allowedHosts` only.
    package mutating func liftAllowList() { allowList = nil }

    /// The engine took the running request off the wire (promotion, explicit pause).
    package mutating func pause() {
        if state == .running || state == .queued { state = .paused }
    }

    package mutating func cancel() -> Action {
        switch state {
        case .finished, .failed, .cancelled: return .none
        default:
            state = .cancelled
            return .fail(DownloadError(.cancelled, "the download was cancelled"))
        }
    }

    /// A request ended. `now` is the engine clock; `random` in 0..<1 for the backoff jitter.
    package mutating func requestEnded(
        _ outcome: Outcome, policy: RetryPolicy, now: Duration, random: Double, bytesOnDisk: Int64, validator: String?
    ) -> Action {
        guard state == .running else { return .none }
        switch outcome {
        case .complete:
            return .verifyAndFinish
        case .fatal(let error):
            return fail(error)
        case .redirect(let location, let resolved):
            redirectCount += 1
            guard redirectCount <= Self.maximumRedirects else {
                return fail(
                    DownloadError(.redirect, "more than \(Self.maximumRedirects) redirects from \(originalURL)"))
            }
            guard let resolved else {
                return fail(
                    DownloadError(
                        .redirect,
                        "redirect hop \(redirectCount) from \(currentURL) has an unusable Location '\(location)'"))
            }
            if let reason = URLPolicy.check(resolved, allowLists: allowLists) {
                return fail(
                    DownloadError(
                        .notAllowed,
                        "redirect hop \(redirectCount) from \(currentURL) to \(resolved) refused: \(reason)"))
            }
            currentURL = resolved
            attempts += 1
            return resumeRequest(url: resolved, bytesOnDisk: bytesOnDisk, validator: validator)
        case .restartWithoutRange(let reason):
            restartCount += 1
            guard restartCount <= Self.maximumRestarts else {
                return fail(
                    DownloadError(.protocolViolation, "\(reason); gave up after \(Self.maximumRestarts) fresh starts"))
            }
            attempts += 1
            return .startRequest(url: currentURL, offset: 0, validator: nil)
        case .needsCredentials(let challenge):
            if credentialsSent {
                return fail(
                    DownloadError(.authentication, "\(currentURL) refused the credentials (401 again)", httpStatus: 401)
                )
            }
            state = .waitingForCredentials
            return .askForCredentials(challenge: challenge)
        case .retryable(let reason, let retryAfter, let isConnectivity):
            if isForeground && isConnectivity {
                return fail(DownloadError(.network, "\(reason) (foreground downloads do not wait for connectivity)"))
            }
            if isConnectivity {
                // Offline: waiting for the network is not failing. Neither the attempt nor the time
                // counts toward giving up; the wait grows to a minute at most (a network change
                // cuts it short: ``retryNow()``).
                offlineAttempts += 1
                firstFailure = nil
                let delay = policy.offlineDelay(afterAttempt: offlineAttempts, random: random)
                state = .waitingForRetry(until: now + delay)
                return .waitUntil(now + delay, attempt: attempts, reason: reason)
            }
            let started = firstFailure ?? now
            firstFailure = started
            guard
                let delay = policy.delay(
                    afterAttempt: attempts - offlineAttempts, retryAfter: retryAfter, failingFor: now - started,
                    random: random)
            else {
                return fail(
                    DownloadError(
                        .retriesExhausted, "\(reason); gave up after \(attempts - offlineAttempts) attempts"))
            }
            state = .waitingForRetry(until: now + delay)
            return .waitUntil(now + delay, attempt: attempts, reason: reason)
        }
    }

    /// The owner answered the credential request: with credentials (true) or not (false).
    package mutating func credentialsProvided(_ provided: Bool, bytesOnDisk: Int64, validator: String?) -> Action {
        guard state == .waitingForCredentials else { return .none }
        guard provided else {
            return fail(
                DownloadError(.authentication, "\(currentURL) needs credentials and none were given", httpStatus: 401))
        }
        credentialsSent = true
        state = .queued
        return start(bytesOnDisk: bytesOnDisk, validator: validator)
    }

    /// A request for `url` that keeps the `bytesOnDisk` already there when it is safe: always for
    /// content-addressed bytes (no validator sent), else only with a validator (without one a
    /// range could splice two versions: start from zero).
    private func resumeRequest(url: String, bytesOnDisk: Int64, validator: String?) -> Action {
        if contentAddressed { return .startRequest(url: url, offset: bytesOnDisk, validator: nil) }
        let offset = validator == nil ? 0 : bytesOnDisk
        return .startRequest(url: url, offset: offset, validator: offset > 0 ? validator : nil)
    }

    /// Verification finished.
    package mutating func verified(_ error: DownloadError?) -> Action {
        if let error { return fail(error) }
        state = .finished
        return .none
    }

    private mutating func fail(_ error: DownloadError) -> Action {
        state = .failed(error)
        return .fail(error)
    }
}
