import BATestSupport
import Foundation
import Testing

/// `ba demo`, the README's first command: the whole system end to end, as a user runs it.
///
/// Serialized: each run is a basd, the app and a loopback server at 2 MiB/s, and a machine with
/// two cores is better at one of them at a time.
@Suite(.serialized) struct DemoTests {
    let ba = BuildProducts.executable("ba")

    @Test(
        "ba demo installs, downloads, promotes, gets every asset pack (a delta too) and verifies it all, then removes its folder"
    )
    func demoEndsWithTheVerifiedSummary() async throws {
        let run = try await runProcess(ba, ["demo"])
        let output = run.stdout + run.stderr
        #expect(run.status == 0, "\(output)")
        for step in 1...9 { #expect(output.contains("==> \(step)/9 "), "step \(step): \(output)") }
        // The essentials came with `ba install`'s progress (a pipe: a line per quarter), and the
        // essential pack before `ba install` returned (the listing is made after it returned);
        // the on-demand one waits to be asked for.
        #expect(output.contains("essential downloads: 100%"), "\(output)")
        let installed = try #require(
            output.components(separatedBy: "==> 4/9 ").last?.components(separatedBy: "==> 5/9 ").first)
        #expect(installed.firstMatch(of: /\n\s+base\s+essential\s+1\s+1\s+downloaded/) != nil, "\(installed)")
        #expect(installed.firstMatch(of: /\n\s+extras\s+onDemand\s+-\s+1\s+downloadAvailable/) != nil, "\(installed)")
        // The packs were published with the real `ba pack` commands, signed.
        #expect(output.contains("$ ba pack keygen") && output.contains("manifest.json.sig"), "\(output)")
        // The extension read the catalog and scheduled its assets; the app promoted what was still
        // waiting or running, and moved what finished.
        #expect(output.contains("scheduled") && output.contains("from the catalog"), "\(output)")
        #expect(output.contains("app: promoted "), "\(output)")
        #expect(output.contains("app: finished "), "\(output)")
        // The app was launched with a background download under way, and its promotion went on
        // from there: the foreground transfer asked for the rest of the file only. (Conditional
        // on the app finding it still downloading: a loaded machine may start the app too late.)
        let underway = try #require(
            output.firstMatch(of: /(\S+) is under way in the background \(([\d.]+) (B|KiB|MiB) of/), "\(output)")
        #expect(Double(underway.2) ?? 0 > 0, "\(output)")
        if output.contains("app: promoted \(underway.1) to the foreground (it was downloading") {
            let promoted = try #require(
                output.firstMatch(of: /was promoted at .*\(Range: bytes=(\d+)-\)/), "\(output)")
            #expect(Int(promoted.1) ?? 0 > 0, "\(output)")
        }
        // The on-demand pack came only when asked for, in step 7.
        let beforeAsking = try #require(output.components(separatedBy: "==> 7/9 ").first)
        #expect(!beforeAsking.contains("extras 1 is local"), "\(output)")
        let onDemand = try #require(
            output.components(separatedBy: "==> 7/9 ").last?.components(separatedBy: "==> 8/9 ").first)
        #expect(onDemand.contains("extras until now: downloadAvailable"), "\(onDemand)")
        #expect(onDemand.contains("extras 1 is local"), "\(onDemand)")
        // The sample app asked for it with AssetPackManager, saw its status updates, opened a file.
        #expect(onDemand.contains("app: status update: began (version 1)"), "\(onDemand)")
        #expect(onDemand.contains("app: status update: finished"), "\(onDemand)")
        #expect(onDemand.contains("app: opened Extras/remix.m4a (2097152 bytes) from asset pack extras"), "\(onDemand)")
        #expect(beforeAsking.contains("app: read Base/strings.bin (65536 bytes) from asset pack base 1"), "\(output)")
        // levels 2, published mid-demo, came as a delta: basd's own numbers, most bytes reused.
        let delta = try #require(
            output.firstMatch(of: /levels 1 → 2: fetched ([\d.]+) (B|KiB|MiB) of ([\d.]+) MiB \((\d+) % reused\)/),
            "\(output)")
        #expect(Int(delta.4) ?? 0 > 80, "\(delta.0)")
        #expect(Double(delta.3) ?? 0 > 40, "\(delta.0)")
        // The verified summary: every asset and pack file checked, none missing or wrong.
        let summary = try #require(output.components(separatedBy: "==> 9/9 ").last)
        #expect(!summary.contains("MISSING") && !summary.contains("WRONG"), "\(summary)")
        #expect(summary.contains(" ok"), "\(summary)")
        let verified = try #require(
            summary.firstMatch(
                of: /(\d+) of (\d+) assets and (\d+) of (\d+) pack files \(3 packs\) verified by SHA-256/),
            "\(summary)")
        #expect(verified.1 == verified.2 && Int(verified.1) ?? 0 >= 5, "\(summary)")
        #expect(verified.3 == verified.4 && Int(verified.3) ?? 0 >= 3, "\(summary)")
        // The three packs are local at the end, levels at version 2.
        for file in ["AssetPacks/base/Base/shaders.bin", "AssetPacks/extras/Extras/remix.m4a"] {
            #expect(summary.contains(file), "\(file): \(summary)")
        }
        #expect(summary.firstMatch(of: /AssetPacks\/levels\/Levels\/level-07\.pak\s+2\s/) != nil, "\(summary)")
        // The temporary folder (basd's state, the container) is gone.
        let folder = try #require(output.firstMatch(of: /ba install (\/\S+)\/SampleApp/)).1
        #expect(!FileManager.default.fileExists(atPath: String(folder)), "\(folder) was left behind")
    }

    /// The demo's temporary folder and basd's pid, from step 2's lines.
    static func folderAndBasd(_ output: String) throws -> (folder: String, basd: pid_t) {
        let basd = try #require(output.firstMatch(of: /basd is running \(pid (\d+)\)/), "\(output)").1
        let folder = try #require(output.firstMatch(of: /state: (\/\S+)\/state\/state\.sqlite/), "\(output)").1
        return (String(folder), try #require(pid_t(basd)))
    }

    /// What an interruption promises: exit 21, the folder removed, and no basd, app, `ba install`
    /// or runner left (each is given the folder on its command line). Checked at once after the
    /// exit: ba stops them before it exits, nothing is left for the parent-death signal.
    static func expectCleanInterruption(_ demo: ChildProcess, _ output: String) throws {
        let (folder, basd) = try folderAndBasd(output)
        #expect(demo.waitForExit() == 21, "\(demo.stdout)\(demo.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder), "\(folder) was left behind: \(demo.stderr)")
        #expect(processesMentioning(folder).isEmpty, "\(processesMentioning(folder))")
        #expect(kill(basd, 0) != 0 && errno == ESRCH, "basd (pid \(basd)) still runs")
        #expect(!demo.stdout.contains("the demo's folder is kept"), "\(demo.stdout)")
        #expect(!demo.stderr.contains("exited"), "a step reported a failure too: \(demo.stderr)")
    }

    @Test("Ctrl-C while the app runs (SIGINT to the process group): exit 21, folder removed, no child left")
    func interruptedInStepFive() async throws {
        let demo = try ChildProcess(ba, ["demo"])
        defer { demo.killGroup() }
        let output = try demo.waitForOutput(containing: "==> 6/9 ")
        demo.signalGroup(SIGINT)
        try Self.expectCleanInterruption(demo, output)
        #expect(demo.stderr.contains("interrupted (SIGINT); stopping basd and removing"), "\(demo.stderr)")
    }

    @Test("Ctrl-C while `ba pack build` publishes levels: the build is stopped too, folder removed, exit 21")
    func interruptedWhilePublishing() async throws {
        let demo = try ChildProcess(ba, ["demo"])
        defer { demo.killGroup() }
        // The build of levels (48 MiB) takes a while: the interruption comes while it runs.
        _ = try demo.waitForOutput(containing: "$ ba pack build Examples/SampleApp/packs/levels.json")
        demo.signalGroup(SIGINT)
        #expect(demo.waitForExit() == 21, "\(demo.stdout)\(demo.stderr)")
        let folder = try #require(demo.stdout.firstMatch(of: /served from (\/\S+)\/public\)/), "\(demo.stdout)").1
        #expect(!FileManager.default.fileExists(atPath: String(folder)), "\(folder) was left behind: \(demo.stderr)")
        #expect(processesMentioning(String(folder)).isEmpty, "\(processesMentioning(String(folder)))")
        #expect(demo.stderr.contains("interrupted (SIGINT)"), "\(demo.stderr)")
    }

    @Test("SIGTERM to ba alone while the app runs: the same clean end as Ctrl-C")
    func terminatedInStepFive() async throws {
        let demo = try ChildProcess(ba, ["demo"])
        defer { demo.killGroup() }
        let output = try demo.waitForOutput(containing: "==> 6/9 ")
        demo.signal(SIGTERM)
        try Self.expectCleanInterruption(demo, output)
        #expect(demo.stderr.contains("interrupted (SIGTERM)"), "\(demo.stderr)")
    }

    @Test("stdout closed by its reader (ba demo | head): ba stops quietly and cleans up, exit 21")
    func outputClosed() async throws {
        let demo = try ChildProcess(ba, ["demo"])
        defer { demo.killGroup() }
        let output = try demo.waitForOutput(containing: "config.json: one background transfer")
        demo.closeStdout()
        try Self.expectCleanInterruption(demo, output)
        #expect(!demo.stderr.contains("interrupted"), "\(demo.stderr)")
    }

    @Test("ba killed with SIGKILL: basd and the app get the parent-death signal and go")
    func killedBa() async throws {
        let demo = try ChildProcess(ba, ["demo"])
        defer { demo.killGroup() }
        let output = try demo.waitForOutput(containing: "==> 6/9 ")
        let (folder, _) = try Self.folderAndBasd(output)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(!processesMentioning(folder).isEmpty)
        demo.signal(SIGKILL)
        #expect(demo.waitForExit() == 128 + SIGKILL)
        // Bounded: basd stops its transfers and closes its state on SIGTERM within seconds.
        let deadline = Date(timeIntervalSinceNow: 30)
        while !processesMentioning(folder).isEmpty && Date() < deadline { usleep(10_000) }
        #expect(processesMentioning(folder).isEmpty, "\(processesMentioning(folder))")
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
