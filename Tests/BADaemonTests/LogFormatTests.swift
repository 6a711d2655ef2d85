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

    @Test("elsewhere a line starts with the UTC time in milliseconds")
    func timestamped() {
        let date = Date(timeIntervalSince1970: 1_795_606_802.118)
        #expect(LogFormat.timestamped.line("hello", at: date) == "2026-11-25T11:40:02.118Z basd: hello")
    }

    @Test("a basd writing to a pipe stamps each line with the time")
    func basdStampsItsLines() async throws {
        let daemon = try DaemonProcess()
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
}
