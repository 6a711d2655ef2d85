import BATestSupport
import Foundation
import Testing

@testable import BAExtensionHost

/// The sandbox and the call's jail against a hostile extension (BATestEscape), through
/// `ba run-extension` as a real process: every attempt is refused or contained, with the error
/// the extension sees named, and nothing of a call outlives it or its host.
@Suite struct SandboxTests {
    let ba = BuildProducts.executable("ba")
    let escape = BuildProducts.library("BATestEscape")

    /// A temporary folder with an app group container and a script of hostile actions, in which
    /// `{C}` stands for the container and `{D}` for the folder.
    struct Setup {
        let directory: TemporaryDirectory
        let container: String
        let script: String

        init(_ lines: [String]) throws {
            let directory = try TemporaryDirectory()
            let container = directory.path + "/container"
            try FileManager.default.createDirectory(atPath: container, withIntermediateDirectories: true)
            let expanded = lines.map {
                $0.replacingOccurrences(of: "{C}", with: container).replacingOccurrences(
                    of: "{D}", with: directory.path)
            }
            script = try directory.write("actions.txt", expanded.joined(separator: "\n") + "\n")
            self.directory = directory
            self.container = container
        }
    }

    func arguments(_ setup: Setup, _ extra: [String] = []) -> [String] {
        [
            "run-extension", escape, "--event", "install", "--manifest", setup.script, "--app-group-container",
            setup.container, "--json",
        ] + extra
    }

    /// Runs the actions through `ba run-extension --json`; returns the extension's log lines.
    func run(
        _ actions: [String], extra: [String] = [], prepare: (Setup) throws -> Void = { _ in }
    ) async throws
        -> (logs: [String], setup: Setup)
    {
        let probe = try Setup(actions)
        try prepare(probe)
        let output = try await runProcess(ba, arguments(probe, extra))
        #expect(output.status == 0, "ba run-extension: \(output.stderr)\n\(output.stdout)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any], "\(output.stdout)")
        #expect(object["verdict"] as? String == "ok", "\(object)")
        let logs = (object["logs"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String }
        return (logs, probe)
    }

    @Test func networkUnixSocketsFilesAndPtraceAreRefused() async throws {
        // A loopback TCP listener and a unix socket like basd's: the extension must reach neither.
        let listener = try LoopbackListener()
        defer { listener.close() }
        let (logs, setup) = try await run([
            "connect-tcp 127.0.0.1 \(listener.port)",
            "unix {D}/basd.sock",
            "read {D}/state/state.sqlite",
            "write {D}/other-app/evil",
            "write {C}/inside",
            "read {C}/inside",
            "ptrace",
        ]) { setup in
            try FileManager.default.createDirectory(
                atPath: setup.directory.path + "/state", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(
                atPath: setup.directory.path + "/other-app", withIntermediateDirectories: true)
            _ = try setup.directory.write("state/state.sqlite", "basd's state\n")
            try UnixListener.make(at: setup.directory.path + "/basd.sock")
        }
        defer { setup.directory.remove() }
        #expect(logs.contains("connect-tcp: refused: Operation not permitted (errno 1)"), "\(logs)")
        #expect(logs.contains("unix: refused: Operation not permitted (errno 1)"), "\(logs)")
        #expect(logs.contains("read: refused: Permission denied (errno 13)"), "\(logs)")
        #expect(logs.contains("write: refused: Permission denied (errno 13)"), "\(logs)")
        #expect(!FileManager.default.fileExists(atPath: setup.directory.path + "/other-app/evil"))
        // Its own container is its to write.
        #expect(logs.contains("write: ok, wrote"), "\(logs)")
        #expect(logs.contains("read: ok, read 1 byte"), "\(logs)")
        #expect(logs.contains("ptrace: refused: Operation not permitted (errno 1)"), "\(logs)")
        #expect(logs.contains("process_vm_readv: refused: Operation not permitted (errno 1)"), "\(logs)")
    }

    @Test func withoutTheSandboxTheSameConnectSucceeds() async throws {
        // The control: the refusal above is the sandbox's, not a broken probe.
        let listener = try LoopbackListener()
        defer { listener.close() }
        let (logs, setup) = try await run(["connect-tcp 127.0.0.1 \(listener.port)"], extra: ["--no-sandbox"])
        defer { setup.directory.remove() }
        #expect(logs == ["connect-tcp: ok, connected"])
    }

    @Test func setsidAndSetpgidDaemonsAndAForkFloodEndWithTheCall() async throws {
        let (logs, setup) = try await run([
            "daemon {C}/daemon.pid", "pgid-daemon {C}/pgid.pid", "fork-flood 300 {C}/flood.pid",
        ])
        defer { setup.directory.remove() }
        #expect(logs.contains("daemon: ok, detached"), "\(logs)")
        #expect(logs.contains("pgid-daemon: ok, detached"), "\(logs)")
        let flood = try #require(logs.first { $0.hasPrefix("fork-flood:") })
        if getuid() == 0 {
            // The kernel does not apply RLIMIT_NPROC to uid 0: contained by the pid namespace only.
            #expect(flood == "fork-flood: ok, 300 forks")
        } else {
            #expect(flood.hasPrefix("fork-flood: stopped after"), "\(flood)")
        }
        // The call is over: the pid namespace went with it, and every process in it.
        for name in ["daemon.pid", "pgid.pid", "flood.pid"] {
            let pid = try hostPID(setup.container + "/" + name)
            #expect(waitUntilGone(pid, within: .seconds(2)), "\(name): process \(pid) outlived the call")
        }
    }

    @Test(arguments: [SIGKILL, SIGTERM])
    func aCallEndsWhenItsHostIsKilled(signal: Int32) async throws {
        let setup = try Setup(["daemon {C}/daemon.pid", "pid {C}/worker.pid", "hang"])
        defer { setup.directory.remove() }
        let host = try ChildProcess(ba, arguments(setup, ["--timeout", "60"]))
        defer { host.killGroup() }
        let worker = try waitForPID(setup.container + "/worker.pid")
        let daemon = try hostPID(setup.container + "/daemon.pid")
        host.signal(signal)
        #expect(host.waitForExit(timeout: 10) != nil)
        #expect(waitUntilGone(worker, within: .seconds(3)), "the call's worker outlived its host")
        #expect(waitUntilGone(daemon, within: .seconds(3)), "the call's daemon outlived its host")
        // The dead host's temporary folder for the call is removed by the next host that starts.
        let temporary = FileManager.default.temporaryDirectory.path
        let prefix = "ba-tmp-\(host.pid)-"
        func leftovers() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? []).filter { $0.hasPrefix(prefix) }
        }
        // (Not asserted to be there now: a host started by a test running in parallel may have
        // cleaned it up already.)
        let next = try await runProcess(
            ba, ["run-extension", BuildProducts.library("SampleCExtension"), "--event", "install"])
        #expect(next.status == 0, "\(next.stdout)\n\(next.stderr)")
        #expect(leftovers().isEmpty, "\(leftovers())")
    }

    @Test func theRunnerEndsTheCallAtItsOwnDeadlineWhenTheHostIsStuck() async throws {
        let setup = try Setup(["daemon {C}/daemon.pid", "pid {C}/worker.pid", "hang"])
        defer { setup.directory.remove() }
        let host = try ChildProcess(ba, arguments(setup, ["--timeout", "1"]))
        defer {
            host.signal(SIGCONT)
            host.killGroup()
        }
        let worker = try waitForPID(setup.container + "/worker.pid")
        let daemon = try hostPID(setup.container + "/daemon.pid")
        // A stopped host cannot kill at its deadline; the runner's own (deadline + 1 s) ends it.
        host.signal(SIGSTOP)
        #expect(waitUntilGone(worker, within: .seconds(6)), "the worker ran on past the runner's own deadline")
        #expect(waitUntilGone(daemon, within: .seconds(1)))
    }

    @Test func asAnUnprivilegedUserTheCallIsConfinedAndItsProcessesBounded() async throws {
        // The deployment case: no privilege at all, every namespace made through a user namespace.
        // Run as root (CI), the call runs as nobody through setpriv; as another user, as it is.
        let setup = try Setup(["fork-flood 400 {C}/flood.pid", "connect-tcp 127.0.0.1 9", "write {C}/inside"])
        defer { setup.directory.remove() }
        var command = [ba] + arguments(setup)
        if getuid() == 0 {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
                print("SandboxTests: skipped the unprivileged call: it needs /usr/bin/setpriv to run as nobody")
                return
            }
            for path in [setup.directory.path, setup.container, setup.script] {
                chown(path, 65534, 65534)
            }
            command = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + command
        }
        let output = try await runProcess(command[0], Array(command.dropFirst()), environment: ["HOME": "/"])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any],
            "\(output.stdout)\n\(output.stderr)")
        if object["verdict"] as? String == "sandboxUnavailable" {
            // A kernel that refuses unprivileged user namespaces (a sysctl, an LSM): named, not hidden.
            print("SandboxTests: skipped the unprivileged call: \(object["verdictDetail"] ?? "")")
            return
        }
        #expect(output.status == 0, "\(output.stdout)\n\(output.stderr)")
        let logs = (object["logs"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String }
        let flood = try #require(logs.first { $0.hasPrefix("fork-flood:") }, "\(logs)")
        // 256 processes and threads in all: the runner's pid 1 and worker, and the forks.
        #expect(flood.hasPrefix("fork-flood: stopped after 25"), "\(flood)")
        #expect(flood.hasSuffix("(errno 11)"), "\(flood)")
        #expect(logs.contains("connect-tcp: refused: Operation not permitted (errno 1)"), "\(logs)")
        #expect(logs.contains("write: ok, wrote"), "\(logs)")
        #expect(waitUntilGone(try hostPID(setup.container + "/flood.pid"), within: .seconds(2)))
    }

    @Test func theSamplesWorkInsideTheSandbox() async throws {
        let manifest = BuildProducts.source("Examples/Manifests/sample-manifest.json")
        for sample in ["SampleCExtension", "SampleSwiftExtension"] {
            let output = try await runProcess(
                ba, ["run-extension", BuildProducts.library(sample), "--event", "install", "--manifest", manifest])
            #expect(output.status == 0, "\(sample): \(output.stdout)\n\(output.stderr)")
            #expect(output.stdout.hasPrefix("verdict: ok"), "\(sample): \(output.stdout)")
        }
    }

    @Test func aRunnerThatCannotBeConfinedIsSandboxUnavailable() async throws {
        // A runner whose command line it cannot honour stops before loading anything.
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let runner = BuildProducts.executable("ba-extension-runner")
        let wrapper = try directory.write("runner.sh", "#!/bin/sh\nexec '\(runner)' --no-such-layer on \"$@\"\n")
        chmod(wrapper, 0o755)
        let manifest = try directory.write("manifest.json", "{}")
        let supervisor = try BAExtensionSupervisor(runnerPath: wrapper)
        let result = try await supervisor.run(
            .contentRequest(.install, libraryPath: BuildProducts.library("SampleCExtension"), manifestPath: manifest))
        #expect(result.verdict == .sandboxUnavailable(reason: "unknown argument --no-such-layer"))
        #expect(result.identity == nil)
    }

    // MARK: - Helpers

    func hostPID(_ file: String) throws -> pid_t {
        let text = try String(contentsOfFile: file, encoding: .utf8)
        return try #require(pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), "\(file): \(text)")
    }

    /// Waits (bounded, 10 s) for the extension to write a pid file.
    func waitForPID(_ file: String) throws -> pid_t {
        let limit = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: file) && ContinuousClock.now < limit {
            Thread.sleep(forTimeInterval: 0.01)
        }
        return try hostPID(file)
    }

    /// Whether `pid` is gone (or a zombie) within `limit`.
    func waitUntilGone(_ pid: pid_t, within limit: Duration) -> Bool {
        let end = ContinuousClock.now + limit
        while true {
            let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)).flatMap { stat in
                stat.lastIndex(of: ")").map { stat[stat.index($0, offsetBy: 2)] }
            }
            if state == nil || state == "Z" || state == "X" { return true }
            if ContinuousClock.now >= end { return false }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }
}

/// A TCP listener on 127.0.0.1, port 0: something an extension could connect to.
struct LoopbackListener {
    let fd: Int32
    let port: UInt16

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard fd >= 0, bound else { throw BAExtensionHostError("cannot listen on 127.0.0.1") }
        port = UInt16(bigEndian: address.sin_port)
    }

    func close() { _ = Glibc.close(fd) }
}

/// A listening unix socket at a path (closed at once: connecting would still need `socket()`).
enum UnixListener {
    static func make(at path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
        guard bound else { throw BAExtensionHostError("cannot bind \(path)") }
    }
}
