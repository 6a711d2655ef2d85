internal import CBASystem
import Foundation

/// Ctrl-C (SIGINT) and SIGTERM for a command that stops cleanly: a real handler writes to a pipe
/// that a thread of the command's own reads, then calls `stop` there. Not a Dispatch source on an
/// ignored signal, which the kernel can discard (basd saw that: `ShutdownSignals`).
enum Interrupt {
    /// Installs the handler; `stop` runs once per signal, on the reading thread. Without a pipe
    /// the default action (the process ends) stays.
    static func onSignal(_ stop: @escaping @Sendable () -> Void) {
        var pipe: [Int32] = [-1, -1]
        guard ba_sys_pipe_cloexec(&pipe) == 0 else { return }
        guard ba_sys_install_shutdown_signals(pipe[1]) == 0 else {
            close(pipe[0])
            close(pipe[1])
            return
        }
        let readEnd = pipe[0]
        let thread = Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count < 0 && errno == EINTR { continue }
                guard count == 1 else { return }
                stop()
            }
        }
        thread.name = "ba-interrupt"
        thread.start()
    }
}
