import BAExclusiveControl
import BAStore
import Foundation

extension DaemonServer {
    /// The file-system steps of ``DaemonServer/start(_:)``.
    enum Setup {
        /// Raises the soft limit on open files to the hard one (commonly 1024 → 524288): basd's
        /// descriptors grow with its connections and running transfers, never with queued
        /// downloads, but a busy basd should not meet the conservative default first.
        static func raiseDescriptorLimit(log: (String) -> Void) {
            var limit = rlimit()
            guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
            let soft = limit.rlim_cur
            limit.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
                log("could not raise the open-file limit from \(soft): \(String(cString: strerror(errno)))")
            }
        }

        /// Creates `path` (and its parents) with mode 0700 if missing. An existing folder must be
        /// ours, or root's (e.g. `/tmp` as a socket's folder).
        static func makePrivateDirectory(_ path: String, what: String) throws(DaemonError) {
            var info = stat()
            if stat(path, &info) == 0 {
                guard (info.st_mode & S_IFMT) == S_IFDIR else {
                    throw DaemonError(.directory, "the \(what) \(path) exists and is not a folder")
                }
                guard info.st_uid == getuid() || info.st_uid == 0 else {
                    throw DaemonError(
                        .directory,
                        "the \(what) \(path) belongs to uid \(info.st_uid), not to you (uid \(getuid())); choose another path"
                    )
                }
                return
            }
            do {
                try FileManager.default.createDirectory(
                    atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                if let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError,
                    underlying.domain == NSPOSIXErrorDomain
                {
                    throw DaemonError(
                        .directory, "cannot create the \(what) \(path): \(describe(errno: Int32(underlying.code)))")
                }
                throw DaemonError(.directory, "cannot create the \(what) \(path)", cause: error as NSError)
            }
        }

        /// `strerror(code)` and what to do about it, for a file basd must write in its state folder.
        static func describe(errno code: Int32) -> String {
            let text = String(cString: strerror(code))
            switch code {
            case EROFS:
                return "\(text): the state folder is on a file system mounted read-only; "
                    + "remount it read-write, or give basd a writable one (--state-dir or BA_STATE_DIR)"
            case EACCES, EPERM:
                return "\(text): basd (uid \(getuid())) may not write there; make the state folder yours and "
                    + "writable (chown, chmod u+rwx), or give basd another one (--state-dir or BA_STATE_DIR)"
            case ENOSPC, EDQUOT: return "\(text): free some space on its file system, then start basd again"
            default: return "\(text) (errno \(code))"
            }
        }

        /// Takes the state directory's lock without waiting and writes our pid into the file.
        static func takeLock(at path: String) throws(DaemonError) -> ExclusiveControlLock {
            let lock: ExclusiveControlLock
            do throws(ExclusiveControlLock.Failure) {
                lock = try ExclusiveControlLock(path: path)
                try lock.acquire(timeoutMilliseconds: 0)
            } catch {
                guard case .system(let call, let code) = error else {
                    throw alreadyRunning(lockPath: path)
                }
                throw DaemonError(
                    .lock, "cannot \(call == "open" ? "create" : "lock") \(path): \(describe(errno: code))")
            }
            // Rewritten in place (not replaced): the flock belongs to the open file, not the name.
            if let handle = FileHandle(forWritingAtPath: path) {
                try? handle.truncate(atOffset: 0)
                try? handle.write(contentsOf: Data("\(getpid())\n".utf8))
                try? handle.close()
            }
            return lock
        }

        /// The error for a lock another basd holds, with its pid from the lock file.
        static func alreadyRunning(lockPath path: String) -> DaemonError {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let by = holder.flatMap(Int32.init).map { " (held by pid \($0))" } ?? ""
            return DaemonError(
                .alreadyRunning,
                "another basd is using this state directory: the lock \(path) is taken\(by); stop it or use another state directory"
            )
        }

        /// Refuses a store that holds nothing (no apps, no history) while `groupsDirectory` holds
        /// app group containers: such a store lost its state (most often a copy made without its
        /// `-wal` file, which holds every change since the last checkpoint), and serving it would
        /// silently forget every app and download. Runs before anything is written to the file,
        /// so putting the `-wal` back afterwards still works.
        static func vetStore(_ contents: OpeningContents, path: String, groupsDirectory: String) throws(BAStoreError) {
            guard contents.isEmpty else { return }
            let containers = ((try? FileManager.default.contentsOfDirectory(atPath: groupsDirectory)) ?? [])
                .filter { !$0.hasPrefix(".") }.sorted()
            guard !containers.isEmpty else { return }
            let shown = containers.prefix(5).joined(separator: ", ") + (containers.count > 5 ? ", …" : "")
            let state =
                contents.hasSchema
                ? "holds no apps and no history" : "is empty (no tables: new, or only ever written to its -wal file)"
            throw BAStoreError(
                .stateLost,
                "the database \(path) \(state), but \(groupsDirectory) holds the containers of "
                    + "\(containers.count) app group(s) (\(shown)): the state was lost, most likely copied or restored "
                    + "without its -wal file (\(path)-wal), where SQLite keeps every change since the last checkpoint. "
                    + "basd does not start on it, so that nothing is forgotten silently. Put \(path)-wal back from the "
                    + "same copy (with basd stopped) and start basd again; or, to start over, move \(groupsDirectory) "
                    + "aside (it keeps the apps' files) and install the apps again (`ba install`)",
                path: path)
        }

        /// Whether a listening unix socket is bound to `path`, from `/proc/net/unix` (without
        /// connecting: a connection to systemd's socket would start basd.service). False when
        /// `/proc/net/unix` cannot be read.
        static func isListening(_ path: String) -> Bool {
            guard let handle = FileHandle(forReadingAtPath: "/proc/net/unix") else { return false }
            defer { try? handle.close() }
            // procfs reports size 0: read to the end rather than by size.
            let table = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
            let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
            // "Num RefCount Protocol Flags Type St Inode Path"; the path may hold spaces.
            return table.split(separator: "\n").dropFirst().contains { line in
                let fields = line.split(separator: " ", maxSplits: 7, omittingEmptySubsequences: true)
                guard fields.count == 8, let flags = UInt32(fields[3], radix: 16) else { return false }
                let bound = String(fields[7])
                return flags & 0x10000 != 0 && (bound == path || bound == absolute)  // __SO_ACCEPTCON
            }
        }

        /// Logs a warning when a socket-activated socket's file lets other users connect (basd
        /// still refuses their connections by `SO_PEERCRED`). The file is systemd's: basd leaves
        /// its mode alone.
        static func checkActivatedSocketMode(_ socketPath: String, log: (String) -> Void) {
            var info = stat()
            guard stat(socketPath, &info) == 0 else { return }
            let mode = info.st_mode & 0o777
            guard mode & 0o077 != 0 else { return }
            log(
                "the socket-activated socket \(socketPath) has mode 0\(String(mode, radix: 8)); set SocketMode=0600 in basd.socket (connections from other users are refused either way)"
            )
        }

        /// Creates the socket's folder and removes a stale socket there. Call with the lock held:
        /// only then is a socket file at the path a leftover of a dead basd, never a live one's.
        static func prepareSocketPath(_ socketPath: String) throws(DaemonError) {
            // sockaddr_un.sun_path is 108 bytes, NUL included.
            guard socketPath.utf8.count < 108 else {
                throw DaemonError(
                    .socket,
                    "the socket path \(socketPath) is longer than 107 bytes, the unix socket limit; use a shorter one")
            }
            let folder = (socketPath as NSString).deletingLastPathComponent
            try makePrivateDirectory(folder.isEmpty ? "." : folder, what: "socket folder")
            var info = stat()
            guard lstat(socketPath, &info) == 0 else { return }
            guard (info.st_mode & S_IFMT) == S_IFSOCK else {
                throw DaemonError(.socket, "\(socketPath) exists and is not a socket; remove it or choose another path")
            }
            // Our lock only proves no basd of *this* state directory serves it: systemd's basd.socket
            // or a basd of another state directory may, and unlinking would silently cut them off.
            guard !isListening(socketPath) else {
                throw DaemonError(
                    .socket,
                    "something already listens on \(socketPath) (systemd's basd.socket, or a basd with another state directory); stop it (systemctl --user stop basd.socket basd.service) or use another --socket"
                )
            }
            guard unlink(socketPath) == 0 else {
                throw DaemonError(
                    .socket, "cannot remove the stale socket \(socketPath): \(String(cString: strerror(errno)))")
            }
        }
    }
}
