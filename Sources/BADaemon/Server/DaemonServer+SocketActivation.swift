import Foundation

extension DaemonServer {
    /// A listening unix socket that basd was started with instead of binding one itself: systemd's
    /// socket activation (`sd_listen_fds(3)`), where `basd.socket` owns the socket file and passes the
    /// listening socket to `basd.service` as fd 3.
    ///
    /// basd serves on it as it is: it does not bind, chmod or unlink anything (systemd created the
    /// file with the socket unit's `SocketMode=0600`, and keeps it across basd's restarts).
    ///
    /// ```swift
    /// var configuration = DaemonServer.Configuration(stateDirectory: state, socketPath: defaultPath)
    /// if let activated = try DaemonServer.ActivatedSocket.fromEnvironment() {
    ///     configuration.activatedSocket = activated   // socketPath becomes activated.path
    /// }
    /// ```
    package struct ActivatedSocket: Sendable, Equatable {
        /// The first descriptor systemd passes (`SD_LISTEN_FDS_START`).
        package static let firstDescriptor: CInt = 3

        /// The listening socket's descriptor.
        package let fileDescriptor: CInt
        /// The path the socket is bound to (from `getsockname`).
        package let path: String

        /// Checks that `fileDescriptor` is a listening `AF_UNIX` stream socket bound to a path, and
        /// reads that path.
        ///
        /// - Throws: ``DaemonError`` `.socket`, saying what the descriptor is instead.
        package init(fileDescriptor: CInt) throws(DaemonError) {
            self.fileDescriptor = fileDescriptor
            path = try Self.inspect(fileDescriptor)
        }

        /// The socket systemd passed to this process, or nil when basd was not socket-activated.
        ///
        /// Follows `sd_listen_fds(3)`: activated when `LISTEN_PID` is this process's pid and
        /// `LISTEN_FDS` is at least 1. Whether or not it is, `LISTEN_PID`, `LISTEN_FDS` and
        /// `LISTEN_FDNAMES` are removed from the environment, so processes basd starts (extension
        /// runners) never take them for their own; every passed descriptor gets `FD_CLOEXEC`. basd
        /// serves on the first one (fd 3) and leaves any others alone.
        ///
        /// - Throws: ``DaemonError`` `.socket` when the variables are malformed or fd 3 is not a
        ///   listening unix stream socket with a path.
        package static func fromEnvironment() throws(DaemonError) -> ActivatedSocket? {
            let count = try passedDescriptorCount(ProcessInfo.processInfo.environment, pid: getpid())
            for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
            guard count > 0 else { return nil }
            for descriptor in firstDescriptor..<(firstDescriptor + CInt(count)) {
                let flags = fcntl(descriptor, F_GETFD)
                guard flags >= 0, fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) == 0 else {
                    throw DaemonError(
                        .socket,
                        "socket activation: LISTEN_FDS=\(count), but fd \(descriptor) is not open: \(String(cString: strerror(errno)))"
                    )
                }
            }
            return try ActivatedSocket(fileDescriptor: firstDescriptor)
        }

        /// How many descriptors systemd passed to process `pid`, from `environment`: 0 when
        /// `LISTEN_PID` is missing or names another process (the variables were meant for a parent).
        ///
        /// - Throws: ``DaemonError`` `.socket` when `LISTEN_PID` or `LISTEN_FDS` is not a number.
        package static func passedDescriptorCount(
            _ environment: [String: String], pid: pid_t
        ) throws(DaemonError)
            -> Int
        {
            guard let listenPID = environment["LISTEN_PID"] else { return 0 }
            guard let owner = pid_t(listenPID), owner > 0 else {
                throw DaemonError(.socket, "socket activation: LISTEN_PID=\(listenPID) is not a process id")
            }
            guard owner == pid else { return 0 }
            guard let listenFDs = environment["LISTEN_FDS"] else { return 0 }
            // More than a few thousand is no systemd socket unit; also keeps fd arithmetic in range.
            guard let count = Int(listenFDs), (0...4096).contains(count) else {
                throw DaemonError(.socket, "socket activation: LISTEN_FDS=\(listenFDs) is not a count of descriptors")
            }
            return count
        }

        /// The path of the listening unix stream socket `descriptor`.
        private static func inspect(_ descriptor: CInt) throws(DaemonError) -> String {
            let what = "socket activation: fd \(descriptor)"
            var info = stat()
            guard fstat(descriptor, &info) == 0 else {
                throw DaemonError(.socket, "\(what) is not open: \(String(cString: strerror(errno)))")
            }
            guard (info.st_mode & S_IFMT) == S_IFSOCK else {
                throw DaemonError(
                    .socket,
                    "\(what) is not a socket (\(fileType(info.st_mode))); basd needs the listening unix socket of basd.socket there"
                )
            }
            guard let domain = intOption(descriptor, SO_DOMAIN), domain == AF_UNIX else {
                throw DaemonError(.socket, "\(what) is not a unix socket; basd.socket must use ListenStream=/a/path")
            }
            guard let type = intOption(descriptor, SO_TYPE), type == CInt(SOCK_STREAM.rawValue) else {
                throw DaemonError(
                    .socket, "\(what) is not a stream socket; basd.socket must use ListenStream=, not ListenDatagram=")
            }
            guard intOption(descriptor, SO_ACCEPTCONN) == 1 else {
                throw DaemonError(
                    .socket, "\(what) is a unix stream socket that is not listening; basd needs a listening socket")
            }
            var address = sockaddr_un()
            var length = socklen_t(MemoryLayout<sockaddr_un>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            guard named == 0 else {
                throw DaemonError(.socket, "\(what): getsockname failed: \(String(cString: strerror(errno)))")
            }
            let pathLength = Int(length) - MemoryLayout<sa_family_t>.size
            let path = withUnsafeBytes(of: &address.sun_path) { raw in
                // An abstract socket's name starts with NUL; a pathname is NUL-terminated (or fills the field).
                let bytes = raw.prefix(max(0, min(pathLength, raw.count)))
                return bytes.first == 0 ? nil : String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let path, !path.isEmpty else {
                throw DaemonError(
                    .socket,
                    "\(what) is an unnamed or abstract unix socket; basd needs one bound to a path clients can find")
            }
            return path
        }

        private static func intOption(_ descriptor: CInt, _ option: CInt) -> CInt? {
            var value: CInt = 0
            var length = socklen_t(MemoryLayout<CInt>.size)
            return getsockopt(descriptor, SOL_SOCKET, option, &value, &length) == 0 ? value : nil
        }

        private static func fileType(_ mode: mode_t) -> String {
            switch mode & S_IFMT {
            case S_IFREG: "a regular file"
            case S_IFDIR: "a folder"
            case S_IFIFO: "a pipe"
            case S_IFCHR: "a character device"
            case S_IFBLK: "a block device"
            case S_IFLNK: "a symbolic link"
            // What a descriptor basd never received looks like once the runtime reused its number.
            case 0: "an anonymous inode such as an eventfd or epoll descriptor, so it was probably never passed"
            default: "file type \(String(mode & S_IFMT, radix: 8))"
            }
        }
    }
}
