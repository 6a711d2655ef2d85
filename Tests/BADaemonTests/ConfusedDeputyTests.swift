import BAAssetServer
import BATestSupport
import Foundation
import Testing

/// The confused-deputy attack of issue 19 (item 1), through a real basd and a hostile extension
/// (`BATestEscape`) in its real sandbox. basd runs unsandboxed; an extension may plant symbolic
/// links in its container. During its install call it replaces the container's
/// `.background-assets/downloads` with a link to a folder of the user's (`outside`, standing in for
/// `~/.ssh`), and the exclusive-control lock file with a link into it, and returns two downloads;
/// during the first one's `finished` call it tries to read and write `outside` (which that call's
/// Landlock rules must not reach) and plants links named as basd's finished file for the second one
/// would be. Nothing may be written outside, nothing outside read, and both files arrive whole.
@Suite("planted links are never followed", .timeLimit(.minutes(3)))
struct ConfusedDeputyTests {
    let ba = BuildProducts.executable("ba")

    @Test("downloads folder, lock file and finished file's name planted as links: nothing escapes")
    func plantedLinks() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let first = DownloadServiceTests.bytes(200_000, seed: 1)
        let second = DownloadServiceTests.bytes(150_000, seed: 2)
        server.setFile("/first.bin", contents: first)
        server.setFile("/second.bin", contents: second)
        // The second download waits until the links for it are planted.
        server.setBehavior(.status(503, retryAfter: "1"), for: "/second.bin")
        let outside = try TemporaryDirectory()
        defer { outside.remove() }
        try Data("secret\n".utf8).write(to: URL(fileURLWithPath: outside.path + "/secret"))

        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let container = daemon.stateDirectory + "/groups/" + SampleAppFixture.group
        try FileManager.default.createDirectory(atPath: container, withIntermediateDirectories: true)
        try Data(
            [
                "read \(outside.path)/secret", "write \(outside.path)/new", "plant-current %DIR% \(outside.path)",
                "lock",
            ].joined(separator: "\n").utf8
        ).write(to: URL(fileURLWithPath: container + "/on-finished"))
        let script = [
            "plant \(outside.path) \(container)/.background-assets/downloads",
            "plant \(outside.path)/lockfile \(container)/.background-assets-exclusive-control.lock",
            "download first \(server.url("/first.bin")) \(first.count)",
            "download second \(server.url("/second.bin")) \(second.count)",
        ].joined(separator: "\n")
        let fixture = try SampleAppFixture(
            server: server, manifest: Array(script.utf8), extensionLibrary: "BATestEscape")
        defer { fixture.remove() }

        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.stdout.contains("extension install: ok"), "\(install.stdout)\(install.stderr)")
        // The first file's finished call: it tried outside, and planted links for the second.
        _ = try await CLIQueries.poll(
            "the first finished call", daemon, timeout: 60, read: { daemon.standardError },
            until: { $0.contains("plant-current") })
        server.setBehavior(nil, for: "/second.bin")
        let rows = try await CLIQueries.pollDownloads(
            "both downloads finished", daemon, app: SampleAppFixture.bundleIdentifier, timeout: 60,
            until: { rows in rows.count == 2 && rows.allSatisfy { $0["state"] as? String == "finished" } })
        #expect(rows.count == 2)
        // The second finished call ran too (its file was basd's, not the planted link's target).
        _ = try await CLIQueries.poll(
            "the second finished call", daemon, timeout: 60,
            read: { daemon.standardError.components(separatedBy: "] read: ").count - 1 },
            until: { $0 >= 2 })

        for (line, otherwise) in [
            ("read: refused", "the finished call read outside"), ("write: refused", "the finished call wrote outside"),
            ("lock: refused", "the lock through a link was taken"), ("symbolic link", "the refusal says why"),
        ] {
            #expect(await daemon.logged(line), "\(otherwise): \(daemon.standardError)")
        }
        // `ba lock status` refuses the link too, saying what to do, and creates nothing.
        let status = try await runProcess(
            ba, ["lock", "status", "--app", SampleAppFixture.bundleIdentifier, "--socket", daemon.socketPath])
        #expect(status.status != 0 && status.stderr.contains("symbolic link"), "\(status.stdout)\(status.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: outside.path).sorted()
        #expect(left == ["secret"], "basd or the extension wrote outside the container: \(left)")
        #expect(try String(contentsOfFile: outside.path + "/secret", encoding: .utf8) == "secret\n")
    }
}
