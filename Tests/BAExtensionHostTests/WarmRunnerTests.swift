import BATestSupport
import Foundation
import Testing

@testable import BAExtensionHost

/// Calls forked from the warm runner (zygote) end with the same verdicts as spawned ones, inside
/// the same sandbox, and nothing of them outlives the call.
@Suite struct WarmRunnerTests {
    let supervisor: BAExtensionSupervisor
    let directory: TemporaryDirectory
    let manifest: String

    init() throws {
        supervisor = try BAExtensionSupervisor(
            runnerPath: BuildProducts.executable("ba-extension-runner"), sandbox: BAExtensionSandbox(),
            warmRunner: true)
        directory = try TemporaryDirectory()
        manifest = try directory.write("manifest.json", "{\"assets\": []}")
    }

    func call(
        _ plugin: String, timeout: Duration = .seconds(20), memory: UInt64 = 256 << 20
    ) throws
        -> BAExtensionRunResult
    {
        var invocation = BAExtensionInvocation.contentRequest(
            .install, libraryPath: BuildProducts.library(plugin), manifestPath: manifest)
        invocation.timeout = timeout
        invocation.memoryLimitBytes = memory
        return try supervisor.runBlocking(invocation)
    }

    /// Calls the C sample until a call is forked (the warm runner starts in the background).
    func waitUntilWarm() throws -> Bool {
        let limit = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < limit {
            if try call("SampleCExtension").wasForked { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return false
    }

    @Test func forkedCallsGetEveryVerdict() throws {
        defer { directory.remove() }
        try #require(try waitUntilWarm(), "the warm runner never became ready")
        let ok = try call("SampleCExtension")
        #expect(ok.wasForked && ok.verdict == .ok && ok.identity?.name == "SampleCExtension")
        let swift = try call("SampleSwiftExtension")
        #expect(swift.wasForked && swift.verdict == .ok, "\(swift.verdict): \(swift.output)")
        let crash = try call("BATestCrash")
        #expect(crash.wasForked && crash.verdict == .crashed(signal: SIGSEGV), "\(crash.verdict)")
        let hog = try call("BATestHog", memory: 128 << 20)
        #expect(hog.wasForked && hog.verdict == .exceededMemory, "\(hog.verdict): \(hog.output)")
        let hang = try call("BATestHang", timeout: .milliseconds(500))
        #expect(hang.wasForked && hang.verdict == .timedOut)
        #expect(hang.duration < .milliseconds(1500), "\(hang.duration)")
        #expect(!processGroupExists(hang.processID))
        let abi = try call("BATestWrongABI")
        #expect(abi.wasForked && abi.verdict == .abiMismatch(found: "99.0", expected: "1.2"))
    }

    @Test func concurrentForkedCallsAreEachTheirOwn() async throws {
        defer { directory.remove() }
        try #require(try waitUntilWarm(), "the warm runner never became ready")
        let results = try await withThrowingTaskGroup(of: BAExtensionRunResult.self) { group in
            for index in 0..<6 {
                group.addTask { [supervisor, manifest] in
                    try await supervisor.run(
                        .contentRequest(
                            .install,
                            libraryPath: BuildProducts.library(index % 2 == 0 ? "SampleCExtension" : "BATestCrash"),
                            manifestPath: manifest))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.filter { $0.verdict == .ok }.count == 3)
        #expect(results.filter { $0.verdict == .crashed(signal: SIGSEGV) }.count == 3)
    }

    @Test func aCallEndsWhenTheWarmRunnerDiesAndTheNextCallStillRuns() async throws {
        defer { directory.remove() }
        try #require(try waitUntilWarm(), "the warm runner never became ready")
        let zygote = try #require(supervisor.warm?.ready()?.pid)
        // A hanging call forked from it; then the zygote is killed: its children die with it.
        // On a thread of its own: a call blocks its thread until it ends, and the pool's few
        // threads are for the other tests (a pool taken by them kept this one from starting).
        async let hang = offThePool { [self] in try call("BATestHang", timeout: .seconds(30)) }
        let limit = ContinuousClock.now + .seconds(10)
        while childrenOf(zygote).isEmpty && ContinuousClock.now < limit { try await Task.sleep(for: .milliseconds(10)) }
        try #require(!childrenOf(zygote).isEmpty, "no call was forked")
        kill(zygote, SIGKILL)
        let result = try await hang
        // Ended with the zygote (killed by SIGKILL), not at its 30 s deadline (that is timedOut).
        #expect(result.wasForked && result.verdict == .crashed(signal: SIGKILL), "\(result.verdict)")
        #expect(!processGroupExists(result.processID))
        let next = try call("SampleCExtension")
        #expect(next.verdict == .ok)
    }

    /// The pids whose parent is `pid`, from /proc.
    func childrenOf(_ pid: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> pid_t? in
            guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == pid ? pid_t(entry) : nil
        }
    }
}
