internal import CBASystem
import Foundation
import Synchronization

/// A thread blocked in `poll` on one descriptor (an inotify or netlink socket) that calls
/// `changed` on the executor when the descriptor has something to read, until ``stop()``.
///
/// It sleeps until the descriptor or the stop signal (a pipe) is readable: no timeout, so an
/// idle basd is not woken. With a `settle` time, a burst of readiness is one change, told that
/// long after its first part. The descriptor is the watcher's: it closes it when it ends.
final class DescriptorWatcher: Sendable {
    /// The write end of the stop signal, until ``stop()`` closed it.
    private let stopSignal: Mutex<Int32?>

    /// Starts watching `fd` on a thread named `name`; `drain` reads what is there (its content
    /// does not matter to the watcher).
    /// - Throws: A message when the stop signal cannot be made.
    init(
        fd: Int32, name: String, settle: Duration? = nil, executor: ServiceExecutor,
        drain: @escaping @Sendable (Int32) -> Void, changed: @escaping @Sendable () -> Void
    ) throws {
        var pipe: [Int32] = [-1, -1]
        guard ba_sys_pipe_cloexec(&pipe) == 0 else {
            close(fd)
            throw WatchError("pipe: \(String(cString: strerror(errno)))")
        }
        let stopSignal = pipe[1]
        let stopped = pipe[0]
        self.stopSignal = Mutex(stopSignal)
        let settleMilliseconds = settle.map { Int32(clamping: $0.milliseconds) }
        let thread = Thread {
            Self.watch(
                fd: fd, stopped: stopped, settle: settleMilliseconds, executor: executor, drain: drain,
                changed: changed)
        }
        thread.name = name
        thread.start()
    }

    struct WatchError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Ends the thread (at once: closing the pipe wakes it); later calls do nothing.
    func stop() {
        if let fd = stopSignal.withLock({ $0.take() }) { close(fd) }
    }

    private static func watch(
        fd: Int32, stopped: Int32, settle: Int32?, executor: ServiceExecutor,
        drain: @Sendable (Int32) -> Void, changed: @escaping @Sendable () -> Void
    ) {
        defer {
            close(fd)
            close(stopped)
        }
        var pending = false
        while true {
            var entries = [
                pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stopped, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&entries, 2, pending ? (settle ?? 0) : -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if entries[1].revents != 0 { return }
            if entries[0].revents != 0 {
                drain(fd)
                if settle == nil { executor.async(changed) } else { pending = true }
            } else if ready == 0, pending {
                pending = false
                executor.async(changed)
            }
        }
    }
}
