import BAAssetServer
import BACore
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

/// basd against the lying server of issue 19 (item 2): a download's connection drops mid-body,
/// the file changes, and the retry's 206 ignores `If-Range` with validators that do not repeat the
/// partial file's — (a) none after a Last-Modified resume, (b) only Last-Modified after an ETag
/// resume, (c) the weak `W/"v1"` after the strong `"v1"`, (d) the same ETag with a new
/// Last-Modified. The delivered file is the new version whole, never old prefix + new tail.
@Suite("basd's resume rule", .timeLimit(.minutes(2)))
struct ResumeRuleTests {
    @Test("basd never splices a 206 that does not repeat every validator", arguments: ValidatorLie.all)
    func neverSpliced(lie: ValidatorLie) async throws {
        let (name, before, after) = (lie.name, lie.before, lie.after)
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let old = DownloadServiceTests.bytes(300_000, seed: 1)
        let new = DownloadServiceTests.bytes(300_000, seed: 2)
        server.setFile("/liar.bin", contents: old)
        server.setBehavior(
            .switchVersionAfterDrop(dropAfter: 100_000, before: before, after: after, newContents: new),
            for: "/liar.bin")
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        try DownloadServiceTests.register(daemon)
        let inbox = EventInbox()
        let app = try DownloadServiceTests.appClient(daemon, inbox: inbox)
        defer { app.close() }
        try app.call(.subscribeEvents)
        try app.call(.schedule(DownloadDescription(identifier: "liar", url: server.url("/liar.bin"))))
        let events = try await inbox.wait(timeout: 60, "the end") {
            $0.contains { $0.kind == .finished || $0.kind == .failed }
        }
        let finished = try #require(
            events.first { $0.kind == .finished }, "\(name): \(events.map { $0.errorMessage ?? "" })")
        let whole = FileManager.default.contents(atPath: finished.destination ?? "") == Data(new)
        #expect(whole, "\(name): old prefix + new tail spliced\n\(daemon.standardError)")
        let requests = server.requests(for: "/liar.bin")
        #expect(requests.count == 3, "\(name): \(requests)")
        #expect(requests.last?.header("Range") == nil, "\(name): the file starts over")
    }
}
