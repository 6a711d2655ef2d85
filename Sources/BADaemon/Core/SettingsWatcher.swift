import BASettings
import Foundation

/// Watches the folder of basd's settings file with inotify and calls `changed` on the executor
/// when anything in it is written, renamed into place, created or removed, so an edit applies at
/// once (the scheduler's tick still looks too, for a folder created later or a file system without
/// inotify).
enum SettingsWatcher {
    /// Starts watching `directory`.
    /// - Throws: A message naming the call that failed (no such folder, no inotify).
    static func start(
        directory: String, executor: ServiceExecutor, changed: @escaping @Sendable () -> Void
    ) throws -> DescriptorWatcher {
        let fd = inotify_init1(Int32(IN_CLOEXEC) | Int32(IN_NONBLOCK))
        guard fd >= 0 else {
            throw DescriptorWatcher.WatchError("inotify_init1: \(String(cString: strerror(errno)))")
        }
        let mask =
            UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVED_FROM) | UInt32(IN_CREATE)
            | UInt32(IN_DELETE) | UInt32(IN_ATTRIB)
        guard inotify_add_watch(fd, directory, mask) >= 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw DescriptorWatcher.WatchError("inotify_add_watch(\(directory)): \(message)")
        }
        // Which file does not matter: SettingsFile.check() re-reads only a changed file.
        return try DescriptorWatcher(
            fd: fd, name: "basd-settings", executor: executor,
            drain: { fd in
                var buffer = [UInt8](repeating: 0, count: 4096)
                while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
            }, changed: changed)
    }
}
