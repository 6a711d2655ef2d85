internal import BAExclusiveControl
import Foundation

/// The app side of exclusive control: the app group's kernel `flock` (the same lock file the
/// extension's runner locks), plus an in-process gate.
///
/// The gate is needed because `flock` locks belong to an open file description, not a thread:
/// a second thread of the same process locking the same descriptor would succeed at once. One
/// lock file is kept open per process (per container path) for the process's lifetime.
final class AppExclusiveControl: @unchecked Sendable {
    private let condition = NSCondition()
    /// Whether a caller of this process holds (or is taking) the lock; guarded by `condition`.
    private var held = false
    /// The open lock file; guarded by `condition`.
    private var lock: ExclusiveControlLock?

    /// Acquires the lock of the container at `containerPath`, blocking the calling thread.
    ///
    /// - Parameter deadline: nil waits as long as it takes; a date in the past tries once.
    /// - Throws: ``BAError/Code/downloadInvalid`` with a reason when the lock is held past the
    ///   deadline or cannot be opened (the same code the extension side reports).
    func acquire(containerPath: String, deadline: Date?) throws(BAError) {
        condition.lock()
        while held {
            if let deadline {
                // `wait(until:)` returns false at the deadline; a date in the past returns at once.
                if !condition.wait(until: deadline) && held {
                    condition.unlock()
                    throw notAcquired(deadline)
                }
            } else {
                condition.wait()
            }
        }
        held = true
        let path = ExclusiveControlLock.path(inContainer: containerPath)
        let file: ExclusiveControlLock
        do throws(ExclusiveControlLock.Failure) {
            if let lock, lock.path == path {
                file = lock
            } else {
                file = try ExclusiveControlLock(path: path)
                lock = file
            }
        } catch {
            held = false
            condition.signal()
            condition.unlock()
            throw BAError(.downloadInvalid, reason: "cannot open the exclusive-control lock \(path): \(error)")
        }
        condition.unlock()
        // Outside the condition's lock: this may wait for another process for a long time.
        let timeout = deadline.map { BADownloadManager.milliseconds(until: $0) } ?? -1
        do throws(ExclusiveControlLock.Failure) {
            try file.acquire(timeoutMilliseconds: timeout)
        } catch {
            condition.lock()
            held = false
            condition.signal()
            condition.unlock()
            if case .notAcquired = error, let deadline { throw notAcquired(deadline) }
            throw BAError(.downloadInvalid, reason: "exclusive control: \(path): \(error)")
        }
    }

    /// Releases the lock taken by ``acquire(containerPath:deadline:)``.
    func release() {
        condition.lock()
        defer { condition.unlock() }
        guard held else { return }
        try? lock?.release()
        held = false
        condition.signal()
    }

    private func notAcquired(_ deadline: Date) -> BAError {
        BAError(
            .downloadInvalid,
            reason: "exclusive control is held by another process (the extension or another instance of the app); "
                + "not acquired before \(deadline)")
    }
}
