import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

@testable import BADaemon

/// basd's log lines: a priority prefix for the journal, the time elsewhere.
@Suite("basd's log format")
struct LogFormatTests {
    @Test("the journal is the file $JOURNAL_STREAM names, and nothing else")
    func journalDetection() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try directory.write("journal", "")
        let fd = open(path, O_WRONLY)
        defer { close(fd) }
        var info = stat()
        #expect(fstat(fd, &info) == 0)
        #expect(LogFormat.isJournal("\(info.st_dev):\(info.st_ino)", fd: fd))
        #expect(!LogFormat.isJournal("\(info.st_dev):\(info.st_ino + 1)", fd: fd))
        #expect(!LogFormat.isJournal(nil, fd: fd))
        #expect(!LogFormat.isJournal("garbage", fd: fd))
    }

    @Test(
        "priorities and prefixes",
        arguments: [
            ("registered com.example.game 1.0", "<6>basd: registered com.example.game 1.0"),
            (
                "download X: attempt 2 failed (…); retrying in 1 s",
                "<4>basd: download X: attempt 2 failed (…); retrying in 1 s"
            ),
            ("cannot remove /x", "<4>basd: cannot remove /x"),
        ])
    func journalLines(text: String, line: String) {
        #expect(LogFormat.journal.line(text, at: Date()) == line)
    }

    @Test("swift-log levels become syslog priorities for the journal")
    func levels() {
        #expect(BasdLogHandler.priority(of: .warning) == 4)
        #expect(BasdLogHandler.priority(of: .info) == 6)
        #expect(BasdLogHandler.priority(of: .error) == 3)
        #expect(BasdLogHandler.priority(of: .debug) == 7)
        #expect(LogFormat.journal.line("x", at: Date(), priority: 3) == "<3>basd: x")
    }

    @Test("elsewhere a line starts with the UTC time in milliseconds")
    func timestamped() {
        let date = Date(timeIntervalSince1970: 1_795_606_802.118)
        #expect(LogFormat.timestamped.line("hello", at: date) == "2026-11-25T11:40:02.118Z basd: hello")
    }

    @Test("a basd writing to a pipe stamps each line with the time")
    func basdStampsItsLines() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let cli = try DaemonClient(socketPath: daemon.socketPath, client: ClientInfo(role: .cli, pid: getpid()))
        defer { cli.close() }
        try cli.call(
            .registerApp(
                AppRegistration(
                    bundleIdentifier: "com.example.log", version: "1", appGroupIdentifier: nil,
                    appDirectory: daemon.directory.path, extensionPath: nil)))
        let log = try await CLIQueries.poll(
            "the registration's log line", daemon, timeout: 10, read: { daemon.standardError },
            until: { $0.contains("registered com.example.log") })
        for line in log.split(separator: "\n") {
            let stamped = line.range(
                of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z basd: "#, options: .regularExpression)
            #expect(stamped != nil, "\(line)")
        }
    }

    /// Starts basd with `arguments`, its stderr in a file; returns the process and the file.
    func startBasd(_ directory: TemporaryDirectory, _ arguments: [String]) throws -> (Process, String) {
        let log = directory.path + "/basd.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let basd = Process()
        basd.executableURL = URL(fileURLWithPath: BuildProducts.executable("basd"))
        basd.arguments =
            ["--state-dir", directory.path + "/state", "--socket", directory.path + "/basd.sock"] + arguments
        basd.environment = ProcessInfo.processInfo.environment.merging(
            try TestSettings.prepare(stateDirectory: directory.path + "/state")
        ) { $1 }
        basd.standardOutput = FileHandle.nullDevice
        basd.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try basd.run()
        return (basd, log)
    }

    @Test("--log-level warning keeps only failures; debug adds libcurl's trace")
    func logLevels() async throws {
        for level in ["warning", "debug"] {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let (basd, log) = try startBasd(directory, ["--log-level", level])
            defer {
                basd.terminate()
                basd.waitUntilExit()
            }
            let socket = directory.path + "/basd.sock"
            var cli: DaemonClient?
            for _ in 0..<500 where cli == nil {
                cli = try? DaemonClient(socketPath: socket, client: ClientInfo(role: .cli, pid: getpid()))
                if cli == nil { try await Task.sleep(for: .milliseconds(20)) }
            }
            let client = try #require(cli, "basd did not start")
            defer { client.close() }
            try client.call(
                .registerApp(
                    AppRegistration(
                        bundleIdentifier: "com.example.log", version: "1", appGroupIdentifier: "group.com.example.log",
                        appDirectory: directory.path, extensionPath: nil)))
            let app = try DaemonClient(
                socketPath: socket, client: ClientInfo(role: .app, bundleIdentifier: "com.example.log", pid: getpid()))
            defer { app.close() }
            // Nothing listens on port 9 of loopback: the attempt fails, a warning.
            try app.call(.schedule(DownloadPayload(identifier: "a", url: "http://127.0.0.1:9/a.bin")))
            // The file is read once more after the deadline: a test task that was not scheduled
            // until past it (a loaded machine) must not judge a read made before (the empty log of
            // a run that failed so).
            let deadline = Date(timeIntervalSinceNow: 20)
            var text = ""
            while true {
                text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                if text.contains("attempt 1 failed") || Date() >= deadline { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(text.contains("attempt 1 failed"), "\(level): \(text)")
            if level == "warning" {
                #expect(!text.contains("registered com.example.log"), "\(text)")
            } else {
                #expect(text.contains("registered com.example.log"), "\(text)")
                #expect(text.contains("127.0.0.1"), "\(text)")
                #expect(text.contains("* "), "libcurl's trace: \(text)")
            }
        }
    }
}
