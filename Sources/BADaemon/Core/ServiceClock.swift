import Foundation

/// basd's one clock, injected: wall time for what is stored and scheduled (periodic runs, the
/// runtime allowance, purge checks), monotonic time for intervals (progress records, uptime).
/// Tests move both; no service reads `Date()` or `ContinuousClock.now` itself.
struct ServiceClock: Sendable {
    /// The wall clock.
    var wall: @Sendable () -> Date = { Date() }
    /// The monotonic clock.
    var monotonic: @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }

    var now: Date { wall() }
    var instant: ContinuousClock.Instant { monotonic() }
}
