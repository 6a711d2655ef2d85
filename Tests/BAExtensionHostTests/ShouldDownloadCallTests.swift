import BACore
import BATestSupport
import BackgroundAssetsTesting
import Foundation
import Testing

/// The `should_download` entry point (C ABI 1.1) and `ManagedDownloaderExtension.shouldDownload(_:)`
/// in a real runner: one call answers for a list of packs, an extension without the entry point
/// (or built for ABI 1.0) wants them all, and a crash answers nothing.
@Suite struct ShouldDownloadCallTests {
    static let packs = [
        AssetPack(id: "base", version: 3, downloadSize: 1_000, userInfo: Data(#"{"tier":1}"#.utf8)),
        AssetPack(id: "levels", version: 1, downloadSize: 2_000),
        AssetPack(id: "extras", version: 2, downloadSize: 3_000),
    ]

    static func tester(_ library: String) throws -> BAExtensionTester {
        try BAExtensionTester(
            libraryPath: BuildProducts.library(library), runnerPath: BuildProducts.executable("ba-extension-runner"))
    }

    @Test("a C extension answers per pack, in order, and sees each pack's fields")
    func cExtension() async throws {
        let run = try await Self.tester("BATestShouldDownload").shouldDownload(Self.packs)
        #expect(run.verdict == .ok, "\(run.verdict) \(run.output)")
        #expect(run.shouldDownload == [true, true, false])
        #expect(run.identity?.abiMinor == 2)
        #expect(run.identity.map { $0.entryPoints & (1 << 5) != 0 } == true)
        #expect(
            run.logs.map(\.message) == [
                #"should_download base 3 1000 {"tier":1}: yes"#, "should_download levels 1 2000 nil: yes",
                "should_download extras 2 3000 nil: no",
            ])
    }

    @Test("a Swift ManagedDownloaderExtension exported by @main answers through shouldDownload(_:)")
    func swiftExtension() async throws {
        let tester = try Self.tester("BATestManagedExtension")
        let run = try await tester.shouldDownload(Self.packs)
        #expect(run.verdict == .ok, "\(run.verdict) \(run.output)")
        #expect(run.shouldDownload == [true, true, false])
        #expect(run.logs.first?.message == #"shouldDownload base 3 1000 {"tier":1}: true"#)
        // Its downloads(for:) is the managed default: nothing of its own.
        let install = try await tester.downloads(for: .install, manifest: Data("{}".utf8))
        #expect(install.verdict == .ok && install.downloads.isEmpty)
    }

    @Test("Apple's managed snippet, unchanged, wants every pack")
    func appleSnippet() async throws {
        let run = try await Self.tester("AppleCompatibilityManagedExtension").shouldDownload(Self.packs)
        #expect(run.verdict == .ok, "\(run.verdict) \(run.output)")
        #expect(run.identity?.name == "DownloaderExtension")
        #expect(run.shouldDownload == [true, true, true])
    }

    @Test("an extension without should_download wants every pack, with verdict ok")
    func withoutTheEntryPoint() async throws {
        let run = try await Self.tester("SampleCExtension").shouldDownload(Self.packs)
        #expect(run.verdict == .ok, "\(run.verdict) \(run.output)")
        #expect(run.shouldDownload == [true, true, true])
        #expect(run.identity.map { $0.entryPoints & (1 << 5) == 0 } == true)
    }

    @Test("a C ABI 1.0 descriptor (88 bytes, minor 0) still loads: its entry points run and it wants every pack")
    func abi10DescriptorLoads() async throws {
        let tester = try Self.tester("BATestABI10")
        let install = try await tester.downloads(for: .install, manifest: Data("{}".utf8))
        #expect(install.verdict == .ok, "\(install.verdict) \(install.output)")
        #expect(install.identity?.abiMinor == 0 && install.identity?.name == "BATestABI10")
        #expect(install.logs.map(\.message) == ["BATestABI10: downloads_for_request"])
        // Right past its 88 bytes lies a function that crashes: a host that read 96 would call it.
        let run = try await tester.shouldDownload(Self.packs)
        #expect(run.verdict == .ok, "\(run.verdict) \(run.output)")
        #expect(run.shouldDownload == [true, true, true])
    }

    @Test("a should_download that crashes ends the call crashed, with no answers")
    func crashAnswersNothing() async throws {
        let packs = [Self.packs[0], AssetPack(id: "crash", version: 1, downloadSize: 1)]
        let run = try await Self.tester("BATestShouldDownload").shouldDownload(packs)
        #expect(run.verdict == .crashed(signal: SIGSEGV), "\(run.verdict)")
        #expect(run.shouldDownload == nil)
    }

    @Test("answers forged on the protocol socket by the extension end the call as a protocol error, with no answers")
    func forgedAnswersAreNotTrusted() async throws {
        let packs = [Self.packs[0], AssetPack(id: "forge", version: 1, downloadSize: 1)]
        let run = try await Self.tester("BATestShouldDownload").shouldDownload(packs)
        guard case .protocolError(let reason) = run.verdict else {
            Issue.record("expected protocolError, got \(run.verdict)")
            return
        }
        #expect(reason.contains("0 pack decisions for 2 packs"), "\(reason)")
        #expect(run.shouldDownload == nil)
    }

    @Test("the wire form of a shouldDownload event and of the answers round-trips")
    func wireRoundTrip() throws {
        let event = RunnerEvent.shouldDownload([
            AssetPackRecord(id: "a", version: 1, downloadSize: 2, userInfo: Array(#"{"k":"v"}"#.utf8)),
            AssetPackRecord(id: "b", version: 3, downloadSize: 4),
        ])
        let request = RunRequest(libraryPath: "/x.so", event: event, memoryLimitBytes: 0, maximumDownloads: 1)
        let frame = HostMessage.request(request).frame()
        #expect(try HostMessage.decode(Array(frame.dropFirst(4))) == .request(request))
        let answers = RunnerMessage.packDecisions([true, false])
        #expect(try RunnerMessage.decode(Array(answers.frame().dropFirst(4))) == answers)
    }
}
