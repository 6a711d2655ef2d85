import Foundation

/// Watches the folder of basd's settings file with inotify and calls `changed` on the executor
/// when anything in it is written, renamed into place, created or removed, so an edit applies at
/// once (the scheduler's tick still looks too, for a folder created later or a file system without
/// inotify).
final class SettingsWatcher: @unchecked Sendable {
    private let fd: Int32
    private let lock = NSLock()
    private var isStopped = false

    /// Starts watching `directory`.
    /// - Throws: A message naming the call that failed (no such folder, no inotify).
    init(directory: String, executor: ServiceExecutor, changed: @escaping @Sendable () -> Void) throws {
        let fd = inotify_init1(Int32(IN_CLOEXEC) | Int32(IN_NONBLOCK))
        guard fd >= 0 else { throw WatchError("inotify_init1: \(String(cString: strerror(errno)))") }
        let mask =
            UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVED_FROM) | UInt32(IN_CREATE)
            | UInt32(IN_DELETE) | UInt32(IN_ATTRIB)
        guard inotify_add_watch(fd, directory, mask) >= 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw WatchError("inotify_add_watch(\(directory)): \(message)")
        }
        self.fd = fd
        let thread = Thread { [self] in watch(executor: executor, changed: changed) }
        thread.name = "basd-settings"
        thread.start()
    }

    struct WatchError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    func stop() { lock.withLock { isStopped = true } }

    private func watch(executor: ServiceExecutor, changed: @escaping @Sendable () -> Void) {
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !lock.withLock({ isStopped }) {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, 500)
            if ready > 0 {
                // Which file does not matter: SettingsFile.check() re-reads only a changed file.
                while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
                executor.async(changed)
            } else if ready < 0, errno != EINTR {
                return
            }
        }
    }
}
