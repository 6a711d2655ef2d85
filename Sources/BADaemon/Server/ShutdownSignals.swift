internal import CBASystem
import Foundation

/// SIGTERM and SIGINT, seen on a thread of basd's own: a real handler writes the signal's number
/// to a pipe that this thread reads (the self-pipe way).
///
/// Not a Dispatch signal source with the signal ignored: an ignored signal is discarded by the
/// kernel unless the thread it is sent to blocks it, and Dispatch blocks it only in the thread
/// that made the source, so a SIGTERM could vanish and basd never stop.
package enum ShutdownSignals {
    /// Installs the handlers and starts the thread; `received` gets each signal's number, on
    /// that thread. Call once.
    /// - Throws: ``DaemonError`` when the pipe or a handler cannot be set up.
    package static func install(_ received: @escaping @Sendable (Int32) -> Void) throws(DaemonError) {
        var pipe: [Int32] = [-1, -1]
        guard ba_sys_pipe_cloexec(&pipe) == 0 else {
            throw DaemonError(.socket, "cannot make the signal pipe: \(String(cString: strerror(errno)))")
        }
        guard ba_sys_install_shutdown_signals(pipe[1]) == 0 else {
            throw DaemonError(.socket, "cannot handle SIGTERM and SIGINT: \(String(cString: strerror(errno)))")
        }
        let readEnd = pipe[0]
        let thread = Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count < 0 && errno == EINTR { continue }
                guard count == 1 else { return }
                received(Int32(byte))
            }
        }
        thread.name = "basd-signals"
        thread.start()
    }
}
