import BACore
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
        try daemon.register("com.example.log", version: "1", group: nil)
        let log = try await CLIQueries.poll(
            "the registration's log line", daemon, timeout: 10, read: { daemon.standardError },
            until: { $0.contains("registered com.example.log") })
        for line in log.split(separator: "\n") {
            let stamped = line.range(
                of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z basd: "#, options: .regularExpression)
            #expect(stamped != nil, "\(line)")
        }
    }

    @Test("--log-level warning keeps only failures; debug adds libcurl's trace")
    func logLevels() async throws {
        for level in ["warning", "debug"] {
            let daemon = try await DaemonProcess.start(arguments: ["--log-level", level])
            defer { daemon.kill() }
            try daemon.register("com.example.log", version: "1", group: "group.com.example.log")
            let app = try daemon.appClient("com.example.log")
            defer { app.close() }
            // Nothing listens on port 9 of loopback: the attempt fails, a warning.
            try app.call(.schedule(DownloadDescription(identifier: "a", url: "http://127.0.0.1:9/a.bin")))
            // The log is read again after the wait, which judges nothing itself: a test task that
            // was not scheduled until past its deadline (a loaded machine) must not judge a read
            // made before (the empty log of a run that failed so).
            try? await daemon.child.waiting("the failed attempt's log line", timeout: 20) {
                $0.stderr.contains("attempt 1 failed")
            }
            let text = daemon.standardError
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
