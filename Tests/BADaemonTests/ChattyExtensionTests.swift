import BAAssetServer
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 19, "extension log lines drop the install reply": an extension that logged 5,000 lines
/// of 2,000 bytes during install made the run report exceed basd's frame limit, and `ba install`
/// exited 31 "lost the connection" although the downloads were scheduled. Now a call's kept log
/// lines are bounded in bytes (the rest are counted in a note) and a long report goes in parts.
/// Real basd, real runner, a real C plugin (`BATestChatty`), `ba` as a process.
@Suite("a chatty extension", .timeLimit(.minutes(3)))
struct ChattyExtensionTests {
    @Test("5,000 log lines of 2,000 bytes during install: ba install succeeds, the log is kept up to its bound")
    func installWithAFloodOfLogLines() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let names = ["a", "b", "c"]
        for name in names { server.setFile("/" + name, contents: Array((name + name).utf8)) }
        let manifest = "log 5000 2000\n" + names.map { "\($0) \(server.url("/" + $0))\n" }.joined()
        let fixture = try SampleAppFixture(
            server: server, manifest: Array(manifest.utf8), extensionLibrary: "BATestChatty")
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await runProcess(
            CLIQueries.ba, ["install", fixture.appDirectory, "--no-wait", "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)\n\(daemon.standardError.suffix(4_000))")
        #expect(install.stdout.contains("extension install: ok"), "\(install.stdout.prefix(4_000))")
        let refused = install.stdout.split(separator: "\n").filter { $0.contains("refused") }
        #expect(refused.isEmpty, "\(refused)")
        let logs = install.stdout.split(separator: "\n").filter { $0.hasPrefix("  log: ") }
        // 128 KiB of lines: 65 of the 2,000-byte lines, then the summary line, which still fits.
        let kept = logs.filter { $0.contains("BATestChatty line ") }
        #expect(kept.count == 65, "\(logs.count) log lines")
        #expect(kept.first?.contains("BATestChatty line 0 xxx") == true)
        #expect(logs.contains { $0.contains("BATestChatty: returned 3 downloads") }, "\(logs.suffix(2))")
        let note = try #require(logs.last, "no log lines")
        #expect(
            note.contains("[host] 4935 more log lines (9870000 bytes) were dropped")
                && note.contains("at most 1000 lines and 128 KiB"), "\(note)")

        // The downloads were scheduled (and finish).
        _ = try await CLIQueries.pollDownloads(
            "the three downloads finished", daemon, app: SampleAppFixture.bundleIdentifier, timeout: 60,
            until: { rows in
                Set(rows.filter { $0["state"] as? String == "finished" }.compactMap { $0["identifier"] as? String })
                    == Set(names)
            })
    }
}
