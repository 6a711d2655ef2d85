import BACore
import BATestSupport
import Foundation
import Testing

@testable import BAExtensionHost

/// Many events in one runner process: each event is its own entry-point call, in order, with its
/// own deadline and result; the first call that does not end `ok` ends the runner and leaves the
/// rest uncalled. A real runner, a real C plugin (`BATestEvents`).
@Suite struct RunnerBatchTests {
    let supervisor: BAExtensionSupervisor

    init() throws {
        supervisor = try BAExtensionSupervisor(runnerPath: BuildProducts.executable("ba-extension-runner"))
    }

    static func finished(_ identifier: String) -> RunnerEvent {
        .finished(
            DownloadDescription(identifier: identifier, url: "https://example.com/\(identifier)"), filePath: "/dev/null"
        )
    }

    /// Runs `events` in one runner; the results `callEnded` got, and the one returned.
    func run(
        _ events: [RunnerEvent], timeout: Duration = .seconds(20)
    ) throws -> (
        ended: [BAExtensionRunResult], last: BAExtensionRunResult
    ) {
        var invocation = BAExtensionInvocation(
            libraryPath: BuildProducts.library("BATestEvents"), event: events[0], timeout: timeout,
            moreEvents: Array(events.dropFirst()))
        invocation.memoryLimitBytes = 256 << 20
        var ended: [BAExtensionRunResult] = []
        let last = try supervisor.runBlocking(invocation) { ended.append($0) }
        return (ended, last)
    }

    @Test("each event is one call of the same process, in order, each with its own result")
    func everyEventInOrder() throws {
        let names = (1...300).map { "file-\($0)" }
        let (ended, last) = try run(names.map(Self.finished))
        #expect(ended.count == 300)
        #expect(ended.map(\.callIndex) == Array(0..<300))
        #expect(ended.allSatisfy { $0.verdict == .ok })
        // Each call's log lines are its own, and the process counted its calls: one process.
        for (index, result) in ended.enumerated() {
            #expect(
                result.logs.map(\.message) == ["BATestEvents: download_finished \(names[index]) call \(index + 1)"])
        }
        #expect(Set(ended.map(\.processID)).count == 1)
        #expect(last.callIndex == 299 && last.verdict == .ok)
        #expect(!processGroupExists(last.processID))
    }

    @Test("a crash at the third event: two ok results, the crash, and nothing for the rest")
    func crashEndsTheRunner() throws {
        let (ended, last) = try run(["a", "b", "crash-c", "d", "e"].map(Self.finished))
        #expect(ended.map(\.callIndex) == [0, 1, 2])
        #expect(ended.prefix(2).allSatisfy { $0.verdict == .ok })
        #expect(last.callIndex == 2)
        #expect(last.verdict == .crashed(signal: SIGSEGV))
        #expect(last.logs.map(\.message) == ["BATestEvents: download_finished crash-c call 3"])
    }

    @Test("each call has its own deadline: a hang at the second event times out alone")
    func eachCallItsOwnDeadline() throws {
        // Ten quick calls, then a hang: with one deadline for all, the hang would get 1 s minus
        // the time of the calls before it; with a deadline per call, it gets its own second.
        let events = (1...10).map { Self.finished("quick-\($0)") } + [Self.finished("hang-k"), Self.finished("never")]
        let (ended, last) = try run(events, timeout: .seconds(1))
        #expect(ended.count == 11)
        #expect(ended.prefix(10).allSatisfy { $0.verdict == .ok })
        #expect(last.callIndex == 10)
        #expect(last.verdict == .timedOut)
        #expect(last.duration >= .seconds(1), "the hanging call got \(last.duration), not its own second")
        #expect(!processGroupExists(last.processID))
    }

    @Test("the total deadline bounds all the calls together")
    func totalDeadline() throws {
        var invocation = BAExtensionInvocation(
            libraryPath: BuildProducts.library("BATestEvents"), event: Self.finished("a"), timeout: .seconds(20),
            moreEvents: [Self.finished("hang-b")], totalTimeout: .milliseconds(800))
        invocation.memoryLimitBytes = 256 << 20
        let result = try supervisor.runBlocking(invocation)
        #expect(result.callIndex == 1)
        #expect(result.verdict == .timedOut)
    }

    @Test("an entry point the extension lacks ends the runner at that event")
    func missingEntryPointMidway() throws {
        let challenge = RunnerEvent.challenge(
            DownloadDescription(identifier: "c", url: "https://example.com/c"),
            ChallengeRecord(
                host: "example.com", port: 443, protocolName: "https", realm: "", authenticationMethod: "",
                previousFailureCount: 0))
        let (ended, last) = try run([Self.finished("a"), challenge, Self.finished("b")])
        #expect(ended.map(\.callIndex) == [0, 1])
        #expect(last.callIndex == 1)
        #expect(last.verdict.name == "missingEntryPoint")
    }

    @Test("the request with more events round-trips on the wire")
    func wire() throws {
        let request = RunRequest(
            libraryPath: "/x.so", event: Self.finished("a"), memoryLimitBytes: 1, maximumDownloads: 2,
            moreEvents: [Self.finished("b"), .willTerminate])
        var decoder = FrameDecoder()
        decoder.append(HostMessage.request(request).frame())
        let frame = try #require(try decoder.next())
        #expect(try HostMessage.decode(frame) == .request(request))
    }
}
