import BAAssetServer
import BACore
import BADaemon
import BADaemonProtocol
import BATestSupport
import CBASystem
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// basd started by a socket it did not create (systemd's socket activation, done here by hand),
/// and `ba service install|uninstall|status` writing, reading and removing the user units
/// (docs/operations.md, docs/cli.md). systemd itself is not needed.
@Suite("socket activation and ba service", .timeLimit(.minutes(2)))
struct ServiceTests {
    let ba = BuildProducts.executable("ba")

    // MARK: - Socket activation

    @Test("LISTEN_PID/LISTEN_FDS: only a LISTEN_PID equal to the pid counts; malformed values are errors")
    func passedDescriptorCount() throws {
        typealias Activated = DaemonServer.ActivatedSocket
        #expect(try Activated.passedDescriptorCount([:], pid: 42) == 0)
        #expect(try Activated.passedDescriptorCount(["LISTEN_FDS": "1"], pid: 42) == 0)
        #expect(try Activated.passedDescriptorCount(["LISTEN_PID": "41", "LISTEN_FDS": "1"], pid: 42) == 0)
        #expect(try Activated.passedDescriptorCount(["LISTEN_PID": "42"], pid: 42) == 0)
        #expect(try Activated.passedDescriptorCount(["LISTEN_PID": "42", "LISTEN_FDS": "0"], pid: 42) == 0)
        #expect(try Activated.passedDescriptorCount(["LISTEN_PID": "42", "LISTEN_FDS": "2"], pid: 42) == 2)
        for bad in [["LISTEN_PID": "x", "LISTEN_FDS": "1"], ["LISTEN_PID": "42", "LISTEN_FDS": "-1"]] {
            #expect(throws: DaemonError.self) { try Activated.passedDescriptorCount(bad, pid: 42) }
        }
    }

    @Test("a listening unix socket's path is read back; a file, a datagram socket and a non-listening one are refused")
    func inspectDescriptor() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/s.sock"
        let listening = try UnixSocket(path: path, listen: true)
        #expect(try DaemonServer.ActivatedSocket(fileDescriptor: listening.fd).path == path)

        let bound = try UnixSocket(path: directory.path + "/b.sock", listen: false)
        let file = open(try directory.write("plain", "x"), O_RDONLY | O_CLOEXEC)
        defer { close(file) }
        let datagram = try UnixSocket(path: directory.path + "/d.sock", listen: false, type: SOCK_DGRAM)
        for (descriptor, expected) in [
            (bound.fd, "not listening"), (file, "is not a socket (a regular file)"),
            (datagram.fd, "is not a stream socket"),
        ] {
            do {
                _ = try DaemonServer.ActivatedSocket(fileDescriptor: descriptor)
                Issue.record("fd \(descriptor) was accepted")
            } catch {
                #expect(error.code == .socket)
                #expect(error.message.contains(expected), "\(error.message)")
            }
        }
    }

    /// The listening socket systemd would make for basd.socket (`run/basd.sock` in `directory`,
    /// mode 0600 in a 0700 folder): its path, and the socket to pass as fd 3.
    static func activationSocket(in directory: TemporaryDirectory) throws -> (path: String, socket: UnixSocket) {
        try FileManager.default.createDirectory(
            atPath: directory.path + "/run", withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let socketPath = directory.path + "/run/basd.sock"
        let listening = try UnixSocket(path: socketPath, listen: true)
        chmod(socketPath, 0o600)
        return (socketPath, listening)
    }

    @Test("socket-activated basd serves on fd 3, leaves the socket file, and a restarted basd takes waiting clients")
    func socketActivation() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (socketPath, listening) = try Self.activationSocket(in: directory)
        let unused = directory.path + "/unused.sock"
        let arguments = ["--state-dir", directory.path + "/state", "--socket", unused]

        let first = try DaemonProcess.activated(descriptor: listening.fd, arguments: arguments)
        defer { first.kill() }
        try first.wait("its listening line") { $0.stdout.contains("basd listening on \(socketPath)\n") }
        #expect(first.stdout.contains("--socket \(unused) is not used"), "\(first.stdout)")
        // The startup line says where basd serves, and that systemd made the socket.
        #expect(first.stdout.contains("socket \(socketPath) (socket-activated)"), "\(first.stdout)")
        let status = try await runProcess(ba, ["status", "--json", "--socket", socketPath])
        #expect(status.status == 0, "\(status.stderr)")
        let object = try #require(CLICommandTests.json(status.stdout), "\(status.stdout)")
        #expect(object["pid"] as? Int == Int(first.pid))
        #expect(!FileManager.default.fileExists(atPath: unused))

        // SIGTERM: a graceful exit that leaves the socket it did not create, still listening.
        first.signal(SIGTERM)
        #expect(first.waitForExit(timeout: 20) == 0, "\(first.stdout)")
        var info = stat()
        #expect(lstat(socketPath, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK)

        // Like systemd between two basds: a client connects while none runs and waits in the
        // backlog; the next basd, given the same socket, answers it.
        let early = try TestClient(socketPath: socketPath)
        let second = try DaemonProcess.activated(descriptor: listening.fd, arguments: arguments)
        defer { second.kill() }
        try second.wait("its listening line") { $0.stdout.contains("basd listening on \(socketPath)\n") }
        try early.handshake()
        #expect(try early.status().pid == second.pid)
        second.signal(SIGTERM)
        #expect(second.waitForExit(timeout: 20) == 0, "\(second.stdout)")
        #expect(lstat(socketPath, &info) == 0)
    }

    @Test(
        "--exit-when-idle: basd stays while a client is connected, exits 0 once idle, and its socket starts it again"
    )
    func idleExit() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (socketPath, listening) = try Self.activationSocket(in: directory)
        let arguments = ["--state-dir", directory.path + "/state", "--exit-when-idle", "0.5"]

        let first = try DaemonProcess.activated(descriptor: listening.fd, arguments: arguments)
        defer { first.kill() }
        try first.wait("its listening line") { $0.stdout.contains("basd listening on \(socketPath)\n") }
        try first.wait("its idle-exit line") {
            $0.stdout.contains("idle exit: basd exits after 0.5 s with nothing to do")
        }
        // A client keeps it running: for three timeouts (a busy machine only makes this window
        // catch less, never fail a correct basd), then it still answers.
        let client = try TestClient(socketPath: socketPath)
        try client.handshake()
        let window = Date().addingTimeInterval(1.5)
        while Date() < window, first.isRunning { usleep(50_000) }
        #expect(first.isRunning, "\(first.stdout)")
        #expect(try client.status().pid == first.pid)
        // The client leaves: basd exits by itself, 0, saying why.
        client.hangUp()
        #expect(first.waitForExit(timeout: 60) == 0, "\(first.stdout)")
        #expect(first.stdout.contains("idle exit: nothing to do for "), "\(first.stdout)")
        var info = stat()
        #expect(lstat(socketPath, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK)

        // As systemd does: a client connects while no basd runs; the socket becomes readable, and
        // the next basd, given the same socket, answers it.
        let next = try TestClient(socketPath: socketPath)
        var ready = pollfd(fd: listening.fd, events: Int16(POLLIN), revents: 0)
        #expect(poll(&ready, 1, 60_000) == 1 && ready.revents & Int16(POLLIN) != 0)
        let second = try DaemonProcess.activated(descriptor: listening.fd, arguments: arguments)
        defer { second.kill() }
        try second.wait("its listening line") { $0.stdout.contains("basd listening on \(socketPath)\n") }
        try next.handshake()
        #expect(try next.status().pid == second.pid)
        next.hangUp()
        #expect(second.waitForExit(timeout: 60) == 0, "\(second.stdout)")

        // Not socket-activated: nothing would start it again, so it does not exit (one line says so);
        // a timeout that is not a positive number is a usage error.
        let plain = try ChildProcess(
            BuildProducts.executable("basd"),
            [
                "--state-dir", directory.path + "/state", "--socket", directory.path + "/plain.sock",
                "--exit-when-idle", "0.5",
            ],
            environment: try TestSettings.prepare(stateDirectory: directory.path + "/state"))
        defer { plain.kill() }
        try plain.wait("its listening line") { $0.stdout.contains("basd listening on ") }
        try plain.wait("the line saying --exit-when-idle is not used") {
            $0.stderr.contains("--exit-when-idle is not used: basd was not started by its socket")
        }
        plain.signal(SIGTERM)
        #expect(plain.waitForExit(timeout: 20) == 0)
        let zero = try await runProcess(BuildProducts.executable("basd"), ["--exit-when-idle", "0"])
        #expect(zero.status == 64 && zero.stderr.contains("--exit-when-idle takes a number of seconds above 0"))
    }

    @Test("--exit-when-idle: an active download keeps basd running with no client; once it is cancelled basd exits")
    func idleExitWaitsForDownloads() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (socketPath, listening) = try Self.activationSocket(in: directory)
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        // Held after its first 64 KiB: the download stays active until it is cancelled.
        server.setFile("/a.bin", contents: [UInt8](repeating: 7, count: 600_000))
        server.setBehavior(.stall(afterBytes: 64 << 10), for: "/a.bin")
        let basd = try DaemonProcess.activated(
            descriptor: listening.fd, arguments: ["--state-dir", directory.path + "/state", "--exit-when-idle", "0.5"])
        defer { basd.kill() }
        try basd.wait("its listening line") { $0.stdout.contains("basd listening on \(socketPath)\n") }
        let app = "com.example.idle"
        do {
            let cli = try DaemonClient(socketPath: socketPath, client: ClientInfo(role: .cli, pid: getpid()))
            defer { cli.close() }
            _ = try cli.call(
                .registerApp(
                    AppRegistration(
                        bundleIdentifier: app, version: "1.0", appGroupIdentifier: "group.\(app)",
                        appDirectory: directory.path, extensionPath: nil)))
            let client = try DaemonClient(
                socketPath: socketPath, client: ClientInfo(role: .app, bundleIdentifier: app, pid: getpid()))
            defer { client.close() }
            _ = try client.call(.schedule(DownloadDescription(identifier: "a", url: server.url("/a.bin"))))
        }
        // Running, and no client left: basd stays for the download, three timeouts long (a busy
        // machine only makes this window catch less, never fail a correct basd).
        let deadline = Date().addingTimeInterval(30)
        while server.requests(for: "/a.bin").isEmpty, Date() < deadline { usleep(20_000) }
        #expect(!server.requests(for: "/a.bin").isEmpty)
        let window = Date().addingTimeInterval(1.5)
        while Date() < window, basd.isRunning { usleep(50_000) }
        // (Required: with basd gone, the cancel below would wait in the socket's backlog.)
        try #require(basd.isRunning, "\(basd.stdout)")
        #expect(!basd.stdout.contains("idle exit: nothing to do"), "\(basd.stdout)")

        // The app cancels it: nothing is left to do, and basd exits by itself.
        do {
            let client = try DaemonClient(
                socketPath: socketPath, client: ClientInfo(role: .app, bundleIdentifier: app, pid: getpid()))
            defer { client.close() }
            _ = try client.call(.cancel(identifier: "a"))
        }
        #expect(basd.waitForExit(timeout: 60) == 0, "\(basd.stdout)")
        #expect(basd.stdout.contains("idle exit: nothing to do for "), "\(basd.stdout)")
    }

    @Test("socket activation with fd 3 not a listening unix socket: one clear line, exit 1")
    func activationRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = open(try directory.write("plain", "x"), O_RDONLY | O_CLOEXEC)
        defer { close(file) }
        let bound = try UnixSocket(path: directory.path + "/b.sock", listen: false)
        for (descriptor, expected) in [(file, "fd 3 is not a socket (a regular file)"), (bound.fd, "not listening")] {
            let daemon = try DaemonProcess.activated(
                descriptor: descriptor,
                arguments: ["--state-dir", directory.path + "/state", "--socket", directory.path + "/x"])
            defer { daemon.kill() }
            #expect(daemon.waitForExit(timeout: 20) == 1, "\(daemon.stdout)")
            #expect(daemon.stdout.contains("basd: socket activation: fd 3 "), "\(daemon.stdout)")
            #expect(daemon.stdout.contains(expected), "\(daemon.stdout)")
            #expect(!daemon.stdout.contains("listening on"), "\(daemon.stdout)")
        }
    }

    @Test("LISTEN_PID of another process: basd binds --socket itself, and removes it at exit")
    func activationForSomeoneElse() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let passed = try UnixSocket(path: directory.path + "/passed.sock", listen: true)
        let own = directory.path + "/own.sock"
        let daemon = try DaemonProcess.activated(
            descriptor: passed.fd, arguments: ["--state-dir", directory.path + "/state", "--socket", own],
            listenPID: "1")
        defer { daemon.kill() }
        try daemon.wait("its listening line") { $0.stdout.contains("basd listening on \(own)\n") }
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(timeout: 20) == 0, "\(daemon.stdout)")
        #expect(!FileManager.default.fileExists(atPath: own))
        #expect(FileManager.default.fileExists(atPath: directory.path + "/passed.sock"))
    }

    @Test("basd started by hand never unlinks a socket something listens on (basd.socket's): exit 1, socket kept")
    func liveSocketKept() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let socketPath = directory.path + "/basd.sock"
        let live = try UnixSocket(path: socketPath, listen: true)
        let run = try runDaemonToExit(stateDirectory: directory.path + "/state", socketPath: socketPath)
        #expect(run.status == 1)
        #expect(run.stderr.contains("something already listens on \(socketPath)"), "\(run.stderr)")
        var info = stat()
        #expect(lstat(socketPath, &info) == 0)
        // Still the same socket: a client reaches it (queued in its backlog).
        #expect(throws: Never.self) { try TestClient(socketPath: socketPath) }
        _ = live
    }

    // MARK: - ba service

    @Test("install --no-systemctl writes both units; --print writes nothing; status; uninstall removes them")
    func installAndUninstall() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let units = directory.path + "/units"
        let basd = URL(fileURLWithPath: BuildProducts.executable("basd")).resolvingSymlinksInPath().path

        let printed = try await runProcess(ba, ["service", "install", "--print", "--unit-directory", units])
        #expect(printed.status == 0, "\(printed.stderr)")
        #expect(
            printed.stdout.contains("# \(units)/basd.service\n") && printed.stdout.contains("# \(units)/basd.socket\n")
                && printed.stdout.contains("# \(units)/basd.timer\n"))
        #expect(printed.stdout.contains("ExecStart=\(basd) --exit-when-idle 300\n"), "\(printed.stdout)")
        #expect(!FileManager.default.fileExists(atPath: units))

        let install = try await runProcess(
            ba, ["service", "install", "--unit-directory", units, "--no-systemctl", "--state-dir", "my state"],
            currentDirectory: directory.path)
        #expect(install.status == 0, "\(install.stderr)")
        #expect(install.stdout.contains("systemctl --user daemon-reload\n"))
        #expect(
            install.stdout.contains("systemctl --user enable --now basd.socket basd.timer basd.service\n"),
            "\(install.stdout)")
        let service = try String(contentsOfFile: units + "/basd.service", encoding: .utf8)
        let socket = try String(contentsOfFile: units + "/basd.socket", encoding: .utf8)
        #expect(
            service.contains("\nExecStart=\(basd) --state-dir \"\(directory.path)/my state\" --exit-when-idle 300\n"),
            "\(service)")
        #expect(service.contains("\nRequires=basd.socket\n") && service.contains("\nNoNewPrivileges=yes\n"))
        #expect(socket.contains("\nListenStream=%t/background-assets/basd.sock\n"))
        #expect(socket.contains("\nSocketMode=0600\n") && socket.contains("\nDirectoryMode=0700\n"))
        // basd.timer starts basd again (15 min after it exited idle) for what is due.
        let timer = try String(contentsOfFile: units + "/basd.timer", encoding: .utf8)
        #expect(timer.contains("\nOnUnitInactiveSec=900s\n") && timer.contains("\nWantedBy=timers.target\n"))

        let status = try await runProcess(
            ba, ["service", "status", "--json", "--no-systemctl", "--unit-directory", units])
        #expect(status.status == 0, "\(status.stderr)")
        let report = try #require(CLICommandTests.json(status.stdout))
        #expect(report["unitDirectory"] as? String == units)
        #expect(report["systemctl"] as? String == "skipped")
        let states = (report["units"] as? [[String: Any]] ?? []).map { $0["state"] as? String }
        #expect(states == ["installed", "installed", "installed"], "\(status.stdout)")

        let uninstall = try await runProcess(ba, ["service", "uninstall", "--unit-directory", units, "--no-systemctl"])
        #expect(uninstall.status == 0, "\(uninstall.stderr)")
        #expect(uninstall.stdout.contains("removed \(units)/basd.service"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: units).isEmpty)
        let again = try await runProcess(ba, ["service", "uninstall", "--unit-directory", units, "--no-systemctl"])
        #expect(again.status == 0 && again.stdout.contains("nothing to remove"), "\(again.stdout)")

        // The default directory follows XDG_CONFIG_HOME.
        let config = directory.path + "/config"
        let byDefault = try await runProcess(
            ba, ["service", "install", "--no-systemctl"], environment: ["XDG_CONFIG_HOME": config])
        #expect(byDefault.status == 0, "\(byDefault.stderr)")
        #expect(FileManager.default.fileExists(atPath: config + "/systemd/user/basd.socket"))
    }

    @Test("a unit file without the marker is never overwritten or removed (exit 40); no basd is exit 66")
    func foreignFiles() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let units = directory.path + "/units"
        let install = ["service", "install", "--unit-directory", units, "--no-systemctl"]
        #expect(try await runProcess(ba, install).status == 0)
        let mine = "[Socket]\nListenStream=/run/mine.sock\n"
        try mine.write(toFile: units + "/basd.socket", atomically: true, encoding: .utf8)

        let uninstall = try await runProcess(ba, ["service", "uninstall", "--unit-directory", units, "--no-systemctl"])
        #expect(uninstall.status == 40)
        #expect(
            uninstall.stderr.contains("\(units)/basd.socket has no `ba service` marker line"), "\(uninstall.stderr)")
        #expect(FileManager.default.fileExists(atPath: units + "/basd.service"))
        let reinstall = try await runProcess(ba, install)
        #expect(reinstall.status == 40, "\(reinstall.stderr)")
        #expect(try String(contentsOfFile: units + "/basd.socket", encoding: .utf8) == mine)
        let status = try await runProcess(ba, ["service", "status", "--unit-directory", units, "--no-systemctl"])
        #expect(status.stdout.contains("basd.socket     foreign: has no `ba service` marker line"), "\(status.stdout)")

        let missing = try await runProcess(ba, install + ["--basd", directory.path + "/no-basd"])
        #expect(missing.status == 66)
        #expect(missing.stderr.contains("no executable basd at \(directory.path)/no-basd"), "\(missing.stderr)")
        #expect(try await runProcess(ba, ["service", "install", "--state-dir", ""]).status == 64)
    }

    @Test("with systemctl on PATH: daemon-reload and enable --now, disable --now; a failing systemctl is exit 41")
    func systemctlCalls() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let units = directory.path + "/units"
        let log = directory.path + "/systemctl.log"
        try FileManager.default.createDirectory(atPath: directory.path + "/bin", withIntermediateDirectories: false)
        let fake = try directory.write(
            "bin/systemctl",
            """
            #!/bin/sh
            echo "$*" >> '\(log)'
            if [ "$2" = is-active ]; then echo active; echo inactive; echo active; exit 3; fi
            exit ${FAKE_SYSTEMCTL_STATUS:-0}

            """)
        chmod(fake, 0o755)
        let path = ["PATH": directory.path + "/bin:" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")]

        let install = try await runProcess(ba, ["service", "install", "--unit-directory", units], environment: path)
        #expect(install.status == 0, "\(install.stderr)")
        let status = try await runProcess(ba, ["service", "status", "--unit-directory", units], environment: path)
        #expect(status.stdout.contains("(active)") && status.stdout.contains("(inactive)"), "\(status.stdout)")
        let uninstall = try await runProcess(
            ba, ["service", "uninstall", "--unit-directory", units], environment: path)
        #expect(uninstall.status == 0, "\(uninstall.stderr)")
        #expect(
            try String(contentsOfFile: log, encoding: .utf8)
                == """
                --user daemon-reload
                --user enable --now basd.socket basd.timer basd.service
                --user is-active basd.service basd.socket basd.timer
                --user disable --now basd.socket basd.timer basd.service
                --user daemon-reload

                """)

        var failing = path
        failing["FAKE_SYSTEMCTL_STATUS"] = "1"
        let failed = try await runProcess(ba, ["service", "install", "--unit-directory", units], environment: failing)
        #expect(failed.status == 41)
        #expect(failed.stderr.contains("the units are written"), "\(failed.stderr)")
        #expect(failed.stderr.contains("  systemctl --user enable --now basd.socket basd.timer basd.service"))
        #expect(FileManager.default.fileExists(atPath: units + "/basd.service"))
    }
}

/// A unix stream socket bound to `path` (listening or not), closed on deinit.
final class UnixSocket {
    let fd: Int32

    init(path: String, listen listens: Bool, type: __socket_type = SOCK_STREAM) throws {
        fd = socket(AF_UNIX, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw HarnessError("path too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, !listens || Glibc.listen(fd, 16) == 0 else {
            let code = errno
            close(fd)
            throw HarnessError("bind/listen \(path): errno \(code)")
        }
    }

    deinit { close(fd) }
}
