import BATestSupport
import Foundation
import Testing

/// `ba demo`, the README's first command: the whole system end to end, as a user runs it.
@Suite struct DemoTests {
    let ba = BuildProducts.executable("ba")

    @Test("ba demo installs, downloads, promotes and verifies every asset, then removes its folder")
    func demoEndsWithTheVerifiedSummary() async throws {
        let run = try await runProcess(ba, ["demo"])
        let output = run.stdout + run.stderr
        #expect(run.status == 0, "\(output)")
        for step in 1...6 { #expect(output.contains("==> \(step)/6 "), "step \(step): \(output)") }
        // The essentials came with `ba install`'s progress (a pipe: a line per quarter).
        #expect(output.contains("essential downloads: 100%"), "\(output)")
        // The extension read the catalog and scheduled its assets; the app promoted what was still
        // waiting or running, and moved what finished.
        #expect(output.contains("scheduled") && output.contains("from the catalog"), "\(output)")
        #expect(output.contains("app: promoted "), "\(output)")
        #expect(output.contains("app: finished "), "\(output)")
        // The verified summary: every asset checked, none missing or wrong.
        let summary = try #require(output.components(separatedBy: "==> 6/6 ").last)
        #expect(!summary.contains("MISSING") && !summary.contains("WRONG"), "\(summary)")
        #expect(summary.contains(" ok"), "\(summary)")
        let verified = try #require(
            summary.firstMatch(of: /(\d+) of (\d+) assets verified by SHA-256/), "\(summary)")
        #expect(verified.1 == verified.2 && Int(verified.1) ?? 0 >= 5, "\(summary)")
        // The temporary folder (basd's state, the container) is gone.
        let folder = try #require(output.firstMatch(of: /ba install (\/\S+)\/SampleApp/)).1
        #expect(!FileManager.default.fileExists(atPath: String(folder)), "\(folder) was left behind")
    }

    @Test("without the Examples folder: exit 66, saying what is missing")
    func missingExamples() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let run = try await runProcess(ba, ["demo", "--examples", directory.path])
        #expect(run.status == 66, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.contains("SampleApp/Info.plist is missing"), "\(run.stderr)")
    }
}
