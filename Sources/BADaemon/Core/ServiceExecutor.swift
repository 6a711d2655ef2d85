import Dispatch
import NIOCore
import NIOPosix
import Synchronization

/// The one serial executor every service of basd runs on: requests from every connection, the
/// engine's events, the ends of extension calls and the scheduler's timers.
///
/// One executor, not one per service: the point of the services is a named owner for every
/// field, not more concurrency. It is the one thread of basd's event loop, which also serves
/// every connection: a request is read, served and answered on one thread, without a hand-off
/// (two context switches per request when the executor was a queue of its own, which were most
/// of what a `scheduleDownload` cost). Store calls block on fsync there, which holds back reading
/// other connections too, but nothing else could have run meanwhile: every request waits for the
/// executor anyway.
final class ServiceExecutor: Sendable {
    /// The event loop group of one thread the executor is (basd's server uses it too).
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    /// That thread's loop.
    let loop: any EventLoop
    /// Set once basd's services shut down: work posted later (a late engine event, a timer) is
    /// dropped instead of running against services that are gone.
    private let stopped = Atomic<Bool>(false)

    init() { loop = group.next() }

    /// Runs `work` on the executor, after what is already queued (nothing once stopped).
    func async(_ work: @escaping @Sendable () -> Void) {
        loop.execute { [self] in
            guard !stopped.load(ordering: .acquiring) else { return }
            work()
        }
    }

    /// Runs `work` on the executor after `delay` (not once stopped); cancel the result to not
    /// run it.
    @discardableResult
    func after(_ delay: Duration, _ work: @escaping @Sendable () -> Void) -> Scheduled<Void> {
        let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        return loop.scheduleTask(in: .nanoseconds(max(0, nanoseconds))) { [self] in
            guard !stopped.load(ordering: .acquiring) else { return }
            work()
        }
    }

    /// Runs `work` on the executor in a later turn, after the connections that are ready were
    /// read (and their requests served): how bulk work goes on in slices without holding other
    /// clients back.
    ///
    /// ``async(_:)`` is not enough for that: NIO's loop runs the tasks posted while it runs tasks
    /// in the same pass, before it looks at the sockets again, so a chain of `async` slices would
    /// hold every connection until the chain ends. A task due a millisecond from now is not due
    /// in the pass that posts it: the loop polls the sockets first (issue 19: 10,000 downloads
    /// scheduled in 400 slices still kept `ba status` waiting 7 s when each posted the next).
    func yielding(_ work: @escaping @Sendable () -> Void) {
        after(.milliseconds(1), work)
    }

    /// From now on, posted work is dropped (the services' last step of shutting down).
    func stop() { stopped.store(true, ordering: .releasing) }

    /// Runs `work` on the executor and waits for it (never from the executor itself).
    func sync<T>(_ work: () -> T) -> T {
        precondition(!loop.inEventLoop, "ServiceExecutor.sync called on the executor: it would wait for itself")
        return withoutActuallyEscaping(work) { work in
            let call = UnsafeCall(work)
            let done = DispatchSemaphore(value: 0)
            loop.execute {
                call.run()
                done.signal()
            }
            done.wait()
            return call.result!
        }
    }

    /// Runs `work` on the executor and waits for it, passing on what it throws (tests).
    func syncThrowing<T>(_ work: () throws -> T) throws -> T {
        let result: Result<T, any Error> = sync { Result { try work() } }
        return try result.get()
    }

    /// Traps unless called on the executor (debug builds).
    func assertOnExecutor() { loop.assertInEventLoop() }
}

/// A closure and its result, handed to the executor by ``ServiceExecutor/sync(_:)``, which waits
/// until it ran: the caller's thread and the executor never touch it at the same time.
private final class UnsafeCall<T>: @unchecked Sendable {
    private var work: (() -> T)?
    var result: T?
    init(_ work: @escaping () -> T) { self.work = work }

    /// Runs the closure and lets go of it (it must not outlive the caller's call).
    func run() {
        result = work?()
        work = nil
    }
}
