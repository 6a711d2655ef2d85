import BATestSupport
import Foundation
import Testing

// The docs an extension author follows, run literally: each doc below is read from docs/, its
// blocks are replayed in a fresh empty folder, and the test fails with the failing block and its
// output. The docs are the single source of their code: nothing here repeats it.
//
// The convention, for every markdown file in docs/ (docs/README.md says the same for writers):
//
// - ```LANG file=PATH      a file the reader creates, e.g. ```swift file=Hello.swift,
//                          ```xml file=HelloApp/Info.plist (GitHub shows LANG and ignores the
//                          rest). Written to PATH, relative to the doc's folder, with exactly the
//                          block's lines.
// - ```sh (bash, shell)    commands the reader runs. All blocks of a doc run in order in ONE
//                          `bash -euo pipefail` process started in that folder, so a variable,
//                          function or `&` job of one block is there for the next, as in one
//                          terminal. Each must succeed: show an expected failure as
//                          `status=0; cmd || status=$?; [ "$status" -eq 16 ]` (or a function
//                          like cli.md's `expect_exit`); `cmd || [ $? -eq 16 ]` passes when cmd
//                          succeeds too, and `noOtherDocHasCommandsToRun` refuses it in any doc.
//                          A block that starts a process with `&` must
//                          also stop it, even on failure (`trap … EXIT`): the harness fails a doc
//                          whose background processes outlive it.
// - ```sh norun            commands shown but not run; say why next to the block.
// - anything else          (output, JSON, usage synopses, ```swift without file=) is for reading.
//
// The environment is this test process's, less every `BA_*` variable, plus `BA` = the package
// root: what a reader has after building the checkout and `export BA=/path/to/checkout` (the
// docs' own norun setup block). Anything else, PATH included, the docs set up themselves. One
// more: `BA_CONFIG` names a settings file of the test's own with `allowedHosts` = loopback, so a
// basd the doc starts never reads the developer's settings nor reaches beyond this machine.
//
// Docs that are run: the three below and the top README's tour. Every other doc in docs/ must have
// no unmarked sh block (`noOtherDocHasCommandsToRun`), so a command added anywhere is either run
// here or marked.
//
// `DOC_TESTS_VERBOSE=1 swift test --filter DocTests` prints each doc's whole output.
//
// The norun blocks, and why:
// - writing-an-extension-{swift,c}.md, cli.md and README.md, "build the checkout and set BA": the
//   test is running inside that built checkout and sets BA itself.
//
// Cost, measured on the 2-core machine: the Swift guide ~15 s alone, ~28 s beside the basd and
// app-client suites, most of it the `swift build` of the guide's test package (it compiles
// BackgroundAssetsTesting and its dependencies from the checkout, about 20 s of CPU); the C guide
// and cli.md 1-6 s each (cli.md has a 1 s deadline example).

/// The extension guides, cli.md and the README's tour, run literally (the convention is above).
@Suite struct DocTests {
    /// The docs name the build folder `$BA/.build/debug`; they can be followed only when the tests
    /// were built there (not with `-c release` or another `--scratch-path`).
    static let builtWhereTheDocsSay: Bool = {
        let docsFolder = BuildProducts.packageRoot.appendingPathComponent(".build/debug").resolvingSymlinksInPath()
        return docsFolder.path == BuildProducts.directory.resolvingSymlinksInPath().path
    }()

    func run(_ document: String, timeout: Duration) async throws {
        let markdown = try String(contentsOfFile: BuildProducts.source(document), encoding: .utf8)
        let script = try DocScript(document: document, markdown: markdown)
        #expect(!script.steps.isEmpty, "\(document) has nothing to run")
        // The doc's own empty folder, and beside it the generated script and its output.
        let folder = try TemporaryDirectory()
        let work = try folder.directory("doc")
        let started = ContinuousClock.now
        // A basd the doc starts reads this settings file, never the developer's: downloads to
        // loopback only (BA_CONFIG, not XDG_CONFIG_HOME, so the doc's other tools see the usual config).
        let settings = folder.path + "/basd-config.json"
        try TestSettings.addLoopbackHosts(to: settings)
        let outcome = try await script.run(
            in: work, scratch: folder.path,
            environment: ["BA": BuildProducts.packageRoot.path, "BA_CONFIG": settings], timeout: timeout)
        let elapsed = ContinuousClock.now - started
        if outcome.succeeded {
            folder.remove()
        } else {
            Issue.record(
                Comment(rawValue: script.report(outcome, timeout: timeout) + "\n(the folder is kept: \(work))"))
        }
        print("\(document): \(script.steps.count) blocks in \(elapsed)")
        if ProcessInfo.processInfo.environment["DOC_TESTS_VERBOSE"] == "1" { print(outcome.output) }
    }

    @Test(.enabled(if: builtWhereTheDocsSay, "the docs use $BA/.build/debug"))
    func swiftExtensionGuide() async throws {
        try await run("docs/writing-an-extension-swift.md", timeout: .seconds(600))
    }

    @Test(.enabled(if: builtWhereTheDocsSay, "the docs use $BA/.build/debug"))
    func cExtensionGuide() async throws {
        try await run("docs/writing-an-extension-c.md", timeout: .seconds(180))
    }

    @Test(.enabled(if: builtWhereTheDocsSay, "the docs use $BA/.build/debug"))
    func cliExamples() async throws {
        try await run("docs/cli.md", timeout: .seconds(180))
    }

    @Test(.enabled(if: builtWhereTheDocsSay, "the docs use $BA/.build/debug"))
    func readmeTour() async throws {
        try await run("README.md", timeout: .seconds(120))
    }

    @Test(.enabled(if: builtWhereTheDocsSay, "the docs use $BA/.build/debug"))
    func assetPackGuide() async throws {
        try await run("docs/packs.md", timeout: .seconds(300))
    }

    static let runDocuments: Set<String> = [
        "docs/writing-an-extension-swift.md", "docs/writing-an-extension-c.md", "docs/cli.md", "README.md",
        "docs/packs.md",
        // Run by InstalledPackageTests against the installed .deb, not here.
        "docs/building-against-the-package.md", "docs/packs-from-any-language.md",
    ]

    /// Every doc's fences follow the convention, only the docs run above have commands to run, and no
    /// expected failure is written in a form that passes when the command succeeds.
    @Test func noOtherDocHasCommandsToRun() throws {
        let folder = BuildProducts.source("docs")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".md") }.sorted()
        #expect(names.contains("writing-an-extension-swift.md"))
        for name in names {
            let document = "docs/" + name
            let markdown = try String(contentsOfFile: folder + "/" + name, encoding: .utf8)
            let blocks = try DocBlocks.parse(markdown, file: document)
            for block in blocks where block.kind == .run && block.text.contains("|| [ $? -eq") {
                Issue.record(
                    "\(document):\(block.line): `cmd || [ $? -eq N ]` also passes when cmd exits 0; write `status=0; cmd || status=$?; [ \"$status\" -eq N ]`"
                )
            }
            guard !Self.runDocuments.contains(document) else { continue }
            for block in blocks {
                switch block.kind {
                case .run, .file:
                    Issue.record(
                        "\(document):\(block.line): a ```\(block.language) block that DocTests would not use; mark it `norun` (saying why), drop `file=`, or add the doc to DocTests.runDocuments"
                    )
                case .norun, .illustration:
                    break
                }
            }
        }
    }
}
