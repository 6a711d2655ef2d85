import Foundation

/// Whether an app's extension is quarantined: skipped because its runs crashed or timed out too
/// many times in a row, until its library file changes.
///
/// Only ``RunOutcome/crashed(_:)`` and ``RunOutcome/timedOut(_:)`` count; ``RunOutcome/ok``
/// resets the count (and lifts a quarantine: a run that worked, e.g. a forced `ba simulate`,
/// proves the file is usable); ``RunOutcome/otherFailure(_:)`` leaves it as it is. After
/// `threshold` (default 3) counted failures in a row the extension is quarantined with a reason
/// and the ``ExtensionFileIdentity`` its file had then. It stays quarantined while the file is
/// unchanged; installing a new build releases it, and so does ``clear()``
/// (`ba apps --clear-quarantine`).
///
/// ```swift
/// let identity = ExtensionFileIdentity.current(path: extensionPath)
/// if state.quarantine.releaseIfChanged(currentIdentity: identity) { log.info("\(app): released") }
/// if let reason = state.quarantine.isQuarantined(currentIdentity: identity) {
///     log.info("\(app): skipped, quarantined: \(reason)")
/// } else {
///     let outcome = … run …
///     state.quarantine.record(outcome: outcome, identity: identity, at: end, threshold: settings.quarantineThreshold)
/// }
/// ```
package struct QuarantineState: Codable, Sendable, Equatable {
    /// A quarantine in force.
    package struct Quarantine: Codable, Sendable, Equatable {
        /// Why, in words: `"crashed 3 times in a row (last: signal 11) at 2025-06-01T10:00:00Z"`.
        package var reason: String
        /// When the last counted failure happened.
        package var since: Date
        /// The extension file's identity at that time (nil if it could not be `stat`ed).
        package var identity: ExtensionFileIdentity?

        /// Creates a quarantine record.
        package init(reason: String, since: Date, identity: ExtensionFileIdentity?) {
            self.reason = reason
            self.since = since
            self.identity = identity
        }

        private enum CodingKeys: String, CodingKey {
            case reason, since, identity
        }
    }

    /// The default number of consecutive crashes or timeouts that quarantines an extension: 3.
    package static let defaultThreshold = 3

    /// Crashes and timeouts since the last ``RunOutcome/ok`` (or release, or clear).
    package private(set) var consecutiveFailures: Int
    /// How many of ``consecutiveFailures`` were crashes (the rest were timeouts).
    package private(set) var consecutiveCrashes: Int
    /// The quarantine in force, if any (whatever the file looks like now; see
    /// ``isQuarantined(currentIdentity:)``).
    package private(set) var quarantine: Quarantine?

    /// A state with no failures and no quarantine.
    package init() {
        consecutiveFailures = 0
        consecutiveCrashes = 0
        quarantine = nil
    }

    /// Records how a run ended.
    ///
    /// A counted failure that reaches `threshold` quarantines the extension; one beyond it (only
    /// possible for a run forced while quarantined) renews the reason and the identity.
    ///
    /// - Parameters:
    ///   - outcome: How the run ended.
    ///   - identity: The extension file's identity when it ran.
    ///   - now: When the run ended.
    ///   - threshold: Consecutive crashes or timeouts that quarantine; values below 1 count as 1.
    package mutating func record(
        outcome: RunOutcome,
        identity: ExtensionFileIdentity?,
        at now: Date,
        threshold: Int = QuarantineState.defaultThreshold
    ) {
        let detail: String
        let isCrash: Bool
        switch outcome {
        case .ok:
            self = QuarantineState()
            return
        case .otherFailure:
            return
        case .crashed(let text):
            (detail, isCrash) = (text, true)
        case .timedOut(let text):
            (detail, isCrash) = (text, false)
        }
        // Saturating: the counts come from a state file, which a daemon must not crash on.
        consecutiveFailures = min(consecutiveFailures, Int.max - 1) + 1
        if isCrash { consecutiveCrashes = min(consecutiveCrashes, consecutiveFailures - 1) + 1 }
        guard consecutiveFailures >= max(1, threshold) else { return }
        let what: String
        let last: String
        switch consecutiveCrashes {
        case consecutiveFailures: (what, last) = ("crashed", detail)
        case 0: (what, last) = ("timed out", detail)
        default: (what, last) = ("crashed or timed out", (isCrash ? "crashed: " : "timed out: ") + detail)
        }
        let reason = "\(what) \(consecutiveFailures) times in a row (last: \(last)) at \(now.formatted(.iso8601))"
        quarantine = Quarantine(reason: reason, since: now, identity: identity)
    }

    /// The quarantine reason if the extension is quarantined and its file is unchanged, else nil.
    ///
    /// - Parameter currentIdentity: The file's identity now
    ///   (``ExtensionFileIdentity/current(path:)``). A file that was missing when quarantined and is
    ///   still missing counts as unchanged.
    package func isQuarantined(currentIdentity: ExtensionFileIdentity?) -> String? {
        guard let quarantine, quarantine.identity == currentIdentity else { return nil }
        return quarantine.reason
    }

    /// Lifts the quarantine if the extension file changed since, and starts counting afresh.
    ///
    /// - Parameter currentIdentity: The file's identity now.
    /// - Returns: true if a quarantine was lifted (basd logs it and saves the state).
    @discardableResult
    package mutating func releaseIfChanged(currentIdentity: ExtensionFileIdentity?) -> Bool {
        guard let quarantine, quarantine.identity != currentIdentity else { return false }
        self = QuarantineState()
        return true
    }

    /// Forgets failures and any quarantine (`ba apps --clear-quarantine`).
    package mutating func clear() {
        self = QuarantineState()
    }

    private enum CodingKeys: String, CodingKey {
        case consecutiveFailures, consecutiveCrashes, quarantine
    }
}
