import Dispatch

/// The one serial executor every service of basd runs on: requests from every connection, the
/// engine's events, the ends of extension calls and the scheduler's timers.
///
/// One executor, not one per service: the point of the services is a named owner for every
/// field, not more concurrency. Store calls block on fsync, so it is a Dispatch queue of its own,
/// off the NIO event loops.
final class ServiceExecutor: Sendable {
    let queue = DispatchQueue(label: "basd.services")

    /// Runs `work` on the executor, after what is already queued.
    func async(_ work: @escaping @Sendable () -> Void) { queue.async(execute: work) }

    /// Runs `work` on the executor after `delay`.
    func after(_ delay: Duration, _ work: @escaping @Sendable () -> Void) {
        let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(max(0, nanoseconds))), execute: work)
    }

    /// Runs `work` on the executor and waits for it (never from the executor itself).
    func sync<T>(_ work: () throws -> T) rethrows -> T { try queue.sync(execute: work) }

    /// Traps unless called on the executor (debug builds).
    func assertOnExecutor() { dispatchPrecondition(condition: .onQueue(queue)) }
}
