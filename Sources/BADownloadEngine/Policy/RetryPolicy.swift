import BAHTTP
import Foundation

/// When to try a failed transfer again: exponential backoff with full jitter, `Retry-After`
/// honoured, and a bounded total time after which the transfer fails.
package struct RetryPolicy: Sendable, Equatable {
    /// Delay before the first retry (doubles per attempt, before jitter).
    package var initialDelay: Duration
    /// Largest delay between two attempts (a `Retry-After` beyond it is capped to it).
    package var maximumDelay: Duration
    /// Time since the transfer's first failure after which it gives up.
    package var giveUpAfter: Duration
    /// Most attempts in all (the first one included).
    package var maximumAttempts: Int

    package init(initialDelay: Duration, maximumDelay: Duration, giveUpAfter: Duration, maximumAttempts: Int) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.giveUpAfter = giveUpAfter
        self.maximumAttempts = maximumAttempts
    }

    /// Background transfers: 1 s doubling to 10 min, for up to 24 hours, 50 attempts.
    package static let background = RetryPolicy(
        initialDelay: .seconds(1), maximumDelay: .seconds(600), giveUpAfter: .seconds(86_400), maximumAttempts: 50)
    /// Foreground transfers: someone is waiting, so 0.5 s doubling to 5 s, for up to 30 s.
    package static let foreground = RetryPolicy(
        initialDelay: .milliseconds(500), maximumDelay: .seconds(5), giveUpAfter: .seconds(30), maximumAttempts: 5)

    /// The delay before attempt `attempt + 1` after `attempt` failed (attempt counts from 1),
    /// or nil when the budget is spent. `random` is in 0..<1 (injected so tests are exact).
    /// - Parameters:
    ///   - retryAfter: The server's `Retry-After`, if any; it replaces the computed delay.
    ///   - failingFor: Time since the first failure.
    package func delay(
        afterAttempt attempt: Int, retryAfter: Duration?, failingFor: Duration, random: Double
    )
        -> Duration?
    {
        guard attempt < maximumAttempts else { return nil }
        let delay: Duration
        if let retryAfter {
            delay = min(max(retryAfter, .zero), maximumDelay)
        } else {
            // Full jitter: uniform in [0, min(max, initial * 2^(attempt-1))], at least 1 ms.
            let exponent = min(attempt - 1, 30)
            let ceiling = min(initialDelay * (1 << exponent), maximumDelay)
            delay = max(ceiling * random, .milliseconds(1))
        }
        guard failingFor + delay <= giveUpAfter else { return nil }
        return delay
    }

    /// The wait before trying again after `attempt` requests in a row could not reach the host
    /// (offline): the same full-jitter backoff, capped at a minute (or ``maximumDelay`` if less),
    /// and never a reason to give up.
    package func offlineDelay(afterAttempt attempt: Int, random: Double) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let ceiling = min(initialDelay * (1 << exponent), maximumDelay, .seconds(60))
        return max(ceiling * random, .milliseconds(1))
    }

    /// Parses `Retry-After`: delta-seconds or an HTTP date (relative to `now`, Unix seconds).
    package static func parseRetryAfter(_ value: String, nowUnixSeconds: Int64) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int64(trimmed), seconds >= 0 { return .seconds(seconds) }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        return .seconds(max(0, date - nowUnixSeconds))
    }
}
