import Foundation
import Synchronization

/// Runs completion handlers asynchronously, as Apple's framework does, each on a thread of its own.
///
/// A delegate callback or an extension entry point that hands over something only for its own
/// duration (a finished file, the extension's process) runs inside ``scoped(_:)``: it does not end
/// until every handler it started, directly or from another handler, has returned. So moving a
/// finished file inside `withExclusiveControl { … }` works whether or not the callback waits.
enum CompletionHandlers {
    /// The scope of each thread that has one, by thread. (Not `Thread.threadDictionary`: on the
    /// runner's main thread, which Foundation did not start, using it crashed at the scope's end.)
    private static let scopes = Mutex<[UInt: DispatchGroup]>([:])

    private static var currentThread: UInt { UInt(bitPattern: Int(bitPattern: pthread_self())) }

    /// Runs `work` on a new thread, counted in the calling thread's scope if it has one.
    static func run(_ work: @escaping () -> Void) {
        let scope = scopes.withLock { $0[currentThread] }
        scope?.enter()
        // Apple's handlers are not @Sendable: the closure moves to the new thread and is only
        // called there, once.
        let box = UncheckedBox(work)
        Thread {
            if let scope { scopes.withLock { $0[currentThread] = scope } }
            box.value()
            if let scope {
                scopes.withLock { $0[currentThread] = nil }
                scope.leave()
            }
        }.start()
    }

    /// Runs `body`, then waits for the handlers it started.
    static func scoped<T>(_ body: () throws -> T) rethrows -> T {
        let group = DispatchGroup()
        let thread = currentThread
        let previous = scopes.withLock { scopes in
            defer { scopes[thread] = group }
            return scopes[thread]
        }
        defer {
            scopes.withLock { $0[thread] = previous }
            group.wait()
        }
        return try body()
    }
}
