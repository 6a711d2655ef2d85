import BATestSupport
import CBASystem
import Foundation
import Testing

/// `ba_sys_spawn_tied_to_parent` (CBASystem), which `ba demo` starts basd and the app with; its
/// parent-death signal is checked end to end by `DemoTests.killedBa`.
@Suite struct TiedSpawnTests {
    /// Spawns `argv` with stdout and stderr on a pipe; the errno value, or 0 and what it printed.
    static func spawn(_ argv: [String]) -> (status: Int32, output: String) {
        var pipe: [Int32] = [-1, -1]
        guard ba_sys_pipe_cloexec(&pipe) == 0 else { return (errno, "") }
        let cArguments = argv.map { strdup($0) } + [nil]
        let environment = ["PATH=/usr/bin:/bin"]
        let cEnvironment = environment.map { strdup($0) } + [nil]
        defer { (cArguments + cEnvironment).forEach { free($0) } }
        var pid: pid_t = 0
        let status = ba_sys_spawn_tied_to_parent(argv[0], cArguments, cEnvironment, pipe[1], pipe[1], SIGTERM, &pid)
        close(pipe[1])
        defer { close(pipe[0]) }
        guard status == 0 else { return (status, "") }
        let output = FileHandle(fileDescriptor: pipe[0], closeOnDealloc: false).readDataToEndOfFile()
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        return (0, String(decoding: output, as: UTF8.self) + "exit=\((raw >> 8) & 0xff)\n")
    }

    @Test("the child: its own process group, no signal ignored, only fds 0-2, stdin /dev/null")
    func childState() throws {
        // What ba demo does before it spawns: the child must not inherit the ignored SIGPIPE.
        // Left ignored afterwards, not restored: swift-nio ignores SIGPIPE once per process, and
        // putting back a default read before NIO did so would let the next write to a closed
        // socket kill the whole test process (signal 13, seen as a run that stops with no summary).
        signal(SIGPIPE, SIG_IGN)
        let script = """
            read -r line || echo stdin=empty
            echo "pid=$$ pgid=$(cut -d' ' -f5 /proc/$$/stat)"
            grep SigIgn /proc/$$/status
            echo fds=$(ls /proc/self/fd | tr '\\n' ' ')
            """
        let (status, output) = Self.spawn(["/bin/sh", "-c", script])
        #expect(status == 0)
        #expect(output.contains("stdin=empty"), "\(output)")
        let ids = try #require(output.firstMatch(of: /pid=(\d+) pgid=(\d+)/), "\(output)")
        #expect(ids.1 == ids.2, "\(output)")
        #expect(output.contains("SigIgn:\t0000000000000000"), "\(output)")
        // ls's own: 0-2 and the folder it reads (3); anything inherited would be 4 and above.
        #expect(output.contains("fds=0 1 2 3\n"), "\(output)")
        #expect(output.hasSuffix("exit=0\n"), "\(output)")
    }

    @Test("exec fails: the errno value")
    func execFails() {
        #expect(Self.spawn(["/nonexistent/program"]).status == ENOENT)
    }
}
