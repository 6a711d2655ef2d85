import BACore
import BATestSupport
import BackgroundAssets
import Foundation
import Testing

@testable import BAExtensionHost

/// Every verdict, produced by a real plugin in a real runner process.
@Suite struct VerdictTests {
    let supervisor: BAExtensionSupervisor

    init() throws {
        supervisor = try BAExtensionSupervisor(runnerPath: BuildProducts.executable("ba-extension-runner"))
    }

    func install(
        _ plugin: String, timeout: Duration = .seconds(20), memory: UInt64 = 256 << 20
    ) async throws
        -> BAExtensionRunResult
    {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try directory.write("manifest.json", "{\"assets\": []}")
        var invocation = BAExtensionInvocation.contentRequest(
            .install, libraryPath: BuildProducts.library(plugin), manifestPath: manifest)
        invocation.timeout = timeout
        invocation.memoryLimitBytes = memory
        return try await supervisor.run(invocation)
    }

    @Test func okForTheCSample() async throws {
        let result = try await install("SampleCExtension")
        #expect(result.verdict == .ok)
        #expect(result.identity?.name == "SampleCExtension")
        #expect(result.identity?.abiMajor == 1)
        #expect(!processGroupExists(result.processID))
    }

    @Test func hangIsKilledAtTheDeadlineWithItsChildren() async throws {
        // 2 s: the warning comes a tenth of the deadline before it (200 ms), room enough for the
        // runner's watcher thread to call the extension on a loaded machine.
        let result = try await install("BATestHang", timeout: .seconds(2))
        #expect(result.verdict == .timedOut)
        // Spawn to reap, measured by the supervisor (not this test's wall clock, which also
        // counts waiting for a thread of the test pool).
        #expect(result.duration >= .seconds(2))
        #expect(
            result.duration < .milliseconds(3500), "the call ended \(result.duration) after spawn for a 2 s deadline")
        #expect(
            result.logs.map(\.message).contains("BATestHang: will terminate"),
            "extensionWillTerminate ran before the kill")
        // The plugin forked a child that also hangs: the whole group must be gone.
        #expect(!processGroupExists(result.processID))
    }

    @Test func segfaultIsCrashedWithTheSignal() async throws {
        let result = try await install("BATestCrash")
        #expect(result.verdict == .crashed(signal: SIGSEGV))
        #expect(!processGroupExists(result.processID))
    }

    @Test func allocatingOneGiBUnderTheCapIsExceededMemory() async throws {
        let result = try await install("BATestHog", memory: 128 << 20)
        #expect(result.verdict == .exceededMemory, "\(result.verdict): \(result.output)")
        #expect(!processGroupExists(result.processID))
    }

    @Test func wrongMajorIsAnABIMismatch() async throws {
        let result = try await install("BATestWrongABI")
        #expect(result.verdict == .abiMismatch(found: "99.0", expected: "1.2"))
    }

    @Test func aTextFileIsNotALibrary() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let fake = try directory.write("libFake.so", "this is not an ELF file\n")
        let manifest = try directory.write("manifest.json", "{}")
        let result = try await supervisor.run(.contentRequest(.install, libraryPath: fake, manifestPath: manifest))
        guard case .notALibrary(let reason) = result.verdict else {
            Issue.record("expected notALibrary, got \(result.verdict)")
            return
        }
        #expect(reason.contains("libFake.so"))
    }

    @Test(
        "a dependency the sandbox hides, named by the extension's RUNPATH: notALibrary says where it is and what to do")
    func aDependencyOutsideTheSandboxIsNamed() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // libdep.so in a folder of its own (not the extension's, not /usr: the sandbox hides it),
        // and an extension that needs it, found through its RUNPATH.
        let dependencies = directory.path + "/deps"
        let extensionFolder = directory.path + "/extension"
        for folder in [dependencies, extensionFolder] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        let dependencySource = try directory.write("dep.c", "int ba_test_dep(void) { return 7; }\n")
        let extensionSource = try directory.write(
            "ext.c",
            """
            #include "ba_extension.h"
            int ba_test_dep(void);
            static void downloads(void *context, const ba_host_api *host, const ba_content_request_info *request) {
                (void)context; (void)host; (void)request; (void)ba_test_dep();
            }
            BA_EXTENSION_DEFINE("com.example.dep", "1.0", .downloads_for_request = downloads)

            """)
        let cc = "/usr/bin/cc"
        let dep = try await runProcess(
            cc, ["-shared", "-fPIC", "-o", dependencies + "/libdep.so", dependencySource])
        try #require(dep.status == 0, "\(dep.stderr)")
        let library = extensionFolder + "/libNeedsDep.so"
        let ext = try await runProcess(
            cc,
            [
                "-shared", "-fPIC", "-I", BuildProducts.source("Sources/CBAExtension/include"), "-o", library,
                extensionSource, "-L", dependencies, "-ldep", "-Wl,-rpath," + dependencies, "-Wl,--enable-new-dtags",
            ])
        try #require(ext.status == 0, "\(ext.stderr)")
        #expect(ELFRunPath.folders(of: library) == [dependencies])
        let manifest = try directory.write("manifest.json", "{}")
        let result = try await supervisor.run(.contentRequest(.install, libraryPath: library, manifestPath: manifest))
        guard case .notALibrary(let reason) = result.verdict else {
            Issue.record("expected notALibrary, got \(result.verdict): \(result.output)")
            return
        }
        #expect(reason.contains("libdep.so is at \(dependencies)/libdep.so"), "\(reason)")
        #expect(reason.contains("the sandbox does not let it read"), "\(reason)")
        // Without the sandbox it loads and runs.
        let unsandboxed = try BAExtensionSupervisor(
            runnerPath: BuildProducts.executable("ba-extension-runner"), sandbox: .disabled)
        let free = try await unsandboxed.run(.contentRequest(.install, libraryPath: library, manifestPath: manifest))
        #expect(free.verdict == .ok, "\(free.verdict)")
    }

    @Test func aRelativePathMeansTheCurrentDirectory() {
        #expect(SupervisedCall.resolvedLibraryPath("libX.so", currentDirectory: "/work") == "/work/libX.so")
        #expect(SupervisedCall.resolvedLibraryPath("lib/libX.so", currentDirectory: "/work/") == "/work/lib/libX.so")
        #expect(SupervisedCall.resolvedLibraryPath("/abs/libX.so", currentDirectory: "/work") == "/abs/libX.so")
    }

    @Test func aMissingFileIsNotALibrary() async throws {
        let result = try await supervisor.run(
            .contentRequest(.install, libraryPath: "/nonexistent/libNope.so", manifestPath: "/dev/null"))
        #expect(result.verdict.name == "notALibrary")
    }

    @Test func noDescriptorIsAMissingEntryPoint() async throws {
        let result = try await install("BATestNoDescriptor")
        guard case .missingEntryPoint(let reason) = result.verdict else {
            Issue.record("expected missingEntryPoint, got \(result.verdict)")
            return
        }
        #expect(reason.contains("ba_extension_descriptor"))
    }

    @Test func anUnimplementedEntryPointIsAMissingEntryPoint() async throws {
        // BATestHang implements only downloads_for_request.
        let download = DownloadDescription(identifier: "a", url: "https://example.com/a")
        let result = try await supervisor.run(
            BAExtensionInvocation(
                libraryPath: BuildProducts.library("BATestHang"), event: .finished(download, filePath: "/dev/null")))
        #expect(result.verdict == .missingEntryPoint(reason: "BATestHang does not implement download_finished"))
    }

    @Test func exitingTheProcessMidCallIsAProtocolError() async throws {
        let result = try await install("BATestExit")
        guard case .protocolError(let reason) = result.verdict else {
            Issue.record("expected protocolError, got \(result.verdict)")
            return
        }
        #expect(reason.contains("exit status 3"))
        #expect(result.downloads.isEmpty, "downloads of a call that did not return are discarded")
    }

    @Test func aRunnerThatIsNotOurRunnerIsAProtocolError() async throws {
        let bogus = try BAExtensionSupervisor(runnerPath: "/bin/true")
        let result = try await bogus.run(
            .contentRequest(.install, libraryPath: BuildProducts.library("SampleCExtension"), manifestPath: "/dev/null")
        )
        #expect(result.verdict.name == "protocolError")
    }

    @Test func aRunnerThatCannotStartIsAHostError() async throws {
        let missing = try BAExtensionSupervisor(runnerPath: "/nonexistent/ba-extension-runner")
        await #expect(throws: BAExtensionHostError.self) {
            _ = try await missing.run(.contentRequest(.install, libraryPath: "x", manifestPath: "/dev/null"))
        }
    }
}
