import BAAssetServer
import BACore
import BADaemonProtocol
import BADownloadEngine
import BATestSupport
import Foundation
import Testing

@testable import BADaemon

#if canImport(Glibc)
    import Glibc
#endif

/// What basd's log lines say: rounded times (not "retrying in 0.6198199774855717 seconds"), the
/// startup line, and byte counts that say whose bytes they are.
@Suite("basd's log line texts", .timeLimit(.minutes(2)))
struct LogLineTextTests {
    @Test(
        "durations are rounded to what a person reads",
        arguments: [
            (Duration.seconds(0.6198199774855717), "0.6 s"),
            (.milliseconds(1), "0 s"),
            (.milliseconds(40), "0.04 s"),
            (.milliseconds(95), "0.1 s"),
            (.seconds(1), "1 s"),
            (.milliseconds(9_940), "9.9 s"),
            (.milliseconds(9_960), "10 s"),
            (.milliseconds(12_500), "13 s"),
            (.seconds(119), "119 s"),
            (.seconds(600), "10 min"),
            (.seconds(5_400), "90 min"),
            (.seconds(7_200), "2 h"),
            (.seconds(86_400), "24 h"),
            (.seconds(9_000), "2 h 30 min"),
            (.seconds(-3), "0 s"),
        ])
    func durations(duration: Duration, text: String) {
        #expect(LogDuration.text(duration) == text)
    }

    @Test("the startup line names version, state, socket, settings and trust")
    func startupLineText() {
        var line = StartupLine(
            version: "1.2.3", stateDirectory: "/s", socketPath: "/r/basd.sock", isSocketActivated: false,
            settingsPath: "/c/config.json", settingsExist: false,
            trust: DownloadRequest.Trust().source(system: ("/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs")))
        #expect(
            line.text
                == "basd 1.2.3 started: state /s, socket /r/basd.sock (bound by basd), settings /c/config.json "
                + "(absent: defaults), trust the system's CAs (libcurl's /etc/ssl/certs/ca-certificates.crt, "
                + "/etc/ssl/certs)")
        line.isSocketActivated = true
        line.settingsExist = true
        line.trust = DownloadRequest.Trust(caFile: "/ca.pem", pinnedPublicKey: "sha256//x").source(system: (nil, nil))
        #expect(line.text.contains("(socket-activated)"))
        #expect(line.text.contains("/c/config.json (present)"))
        #expect(line.text.hasSuffix("trust caFile /ca.pem, pinned public key"))
        #expect(DownloadRequest.Trust().source(system: (nil, nil)) == "the system's CAs (the TLS library's own store)")
        #expect(
            DownloadRequest.Trust(caDirectory: "/certs").source(system: ("/x", nil)) == "caDirectory /certs")
        // Not a warning: it reports no failure.
        #expect(!DaemonServer.isWarning(line.text))
    }

    @Test("a started basd logs its startup line once, with its own paths")
    func startupLineOfARealBasd() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try await daemon.child.waiting("the startup line", timeout: 20) { $0.stderr.contains(" started: ") }
        let lines = daemon.standardError.split(separator: "\n").filter { $0.contains("basd: basd ") }
        #expect(lines.count == 1, "\(daemon.standardError)")
        let line = String(lines.first ?? "")
        let settings = daemon.directory.path + "/config/background-assets/config.json"
        for words in [
            "basd \(DaemonServer.version) started", "state \(daemon.stateDirectory),",
            "socket \(daemon.socketPath) (bound by basd)", "settings \(settings) (present)", "trust ",
        ] {
            #expect(line.contains(words), "missing \(words.debugDescription) in \(line)")
        }
    }

    @Test("the retry line: the attempt, the reason, and the wait rounded with its unit")
    func retryLine() async throws {
        let port = try RetryCommandTests.closedPort()
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try RetryCommandTests.register(daemon)
        _ = try RetryCommandTests.schedule(daemon, "refused", url: "http://127.0.0.1:\(port)/refused.bin")
        try await daemon.child.waiting("a retry line", timeout: 30) { $0.stderr.contains("retrying in") }
        let line = try #require(daemon.standardError.split(separator: "\n").first { $0.contains("retrying in") })
        let pattern = try Regex(
            #"download [^ ]+: attempt 1 failed \(http://127\.0\.0\.1:\#(port)/refused\.bin: [^()]+\); retrying in (\d+(\.\d{1,2})? s|\d+ min)$"#
        )
        #expect(line.contains(pattern), "\(line)")
        #expect(!line.contains("bytes"), "nothing was received, so no byte count: \(line)")
    }
}
