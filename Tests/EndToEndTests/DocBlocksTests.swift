import BATestSupport
import Foundation
import Testing

/// The fence convention of `DocTests`, on small markdown strings.
@Suite struct DocBlocksTests {
    @Test func classifiesBlocksByTheirInfoString() throws {
        let markdown = """
            # Title

            ```swift file=Hello.swift
            print("hi")
            ```

            ```sh
            swiftc Hello.swift
            ```

            ```sh norun
            rm -rf /
            ```

            ```json
            {"a": 1}
            ```

            ```
            ba run-extension LIB --event install
            ```
            """
        let blocks = try DocBlocks.parse(markdown)
        #expect(blocks.map(\.kind) == [.file(path: "Hello.swift"), .run, .norun, .illustration, .illustration])
        #expect(blocks.map(\.language) == ["swift", "sh", "sh", "json", ""])
        #expect(blocks[0].text == "print(\"hi\")\n")
        #expect(blocks[0].line == 3)
        #expect(blocks[1].text == "swiftc Hello.swift\n")
    }

    @Test func keepsBlankLinesAndLongerFencesAndRemovesTheFenceIndentation() throws {
        let markdown = """
            1. Write it:

               ````c file=src/hello.c
               int x;

               ```not a fence end
               ````
            """
        let blocks = try DocBlocks.parse(markdown)
        #expect(blocks.count == 1)
        #expect(blocks[0].kind == .file(path: "src/hello.c"))
        #expect(blocks[0].text == "int x;\n\n```not a fence end\n")
    }

    @Test func inlineCodeWithBackticksIsNotAFence() throws {
        let blocks = try DocBlocks.parse("Use ```sh norun``` to mark a block.\n")
        #expect(blocks.isEmpty)
    }

    @Test(arguments: [
        ("```sh nroun\nx\n```\n", "unknown fence attribute 'nroun'"),
        ("```swift file=/etc/passwd\nx\n```\n", "must be a relative path"),
        ("```swift file=../x.swift\nx\n```\n", "must be a relative path"),
        ("```swift file=a.swift norun\nx\n```\n", "cannot be norun"),
        ("```json norun\n{}\n```\n", "only meaningful on sh"),
        ("```sh\nnever closed\n", "never closed"),
    ])
    func refusesWhatItCannotClassify(markdown: String, message: String) throws {
        let error = #expect(throws: DocBlockError.self) { try DocBlocks.parse(markdown, file: "x.md") }
        #expect(error?.description.contains(message) == true, "\(String(describing: error))")
        #expect(error?.description.hasPrefix("x.md:1:") == true)
    }

    @Test func theScriptWritesFilesAndMarksEachBlock() throws {
        let script = try DocScript(
            document: "docs/x.md",
            markdown: "```text file=a/b.txt\nBA_DOC_EOF\n```\n\n```sh\necho hi\n```\n\n```sh norun\nexit 1\n```\n")
        #expect(script.steps.count == 2)
        let text = script.script(folder: "/tmp/f")
        #expect(text.contains("cat > '/tmp/f/a/b.txt' <<'BA_DOC_EOF_'\nBA_DOC_EOF\nBA_DOC_EOF_\n"))
        #expect(text.contains("##### doc-test 1 docs/x.md:5'\necho hi\n"))
        #expect(!text.contains("exit 1"))
    }
}

/// The harness itself, on small docs: what a reader's failure looks like in the test report.
@Suite(.timeLimit(.minutes(2))) struct DocScriptTests {
    func run(_ markdown: String, timeout: Duration = .seconds(30)) async throws -> (DocScript.Outcome, String) {
        let script = try DocScript(document: "docs/x.md", markdown: markdown)
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let outcome = try await script.run(
            in: try folder.directory("doc"), scratch: folder.path, environment: ["BA": "/checkout"], timeout: timeout)
        return (outcome, script.report(outcome, timeout: timeout))
    }

    @Test func blocksShareOneShellAndSeeTheirFilesAndBA() async throws {
        let (outcome, report) = try await run(
            """
            ```text file=dir/a.txt
            one
            ```

            ```sh
            X=$(cat dir/a.txt)
            helper() { echo "$X $BA"; }
            ```

            ```sh
            [ "$(helper)" = "one /checkout" ]
            [ -z "${BA_SOCKET:-}" ]
            [ "$(ls /proc/self/fd | tr '\\n' ' ')" = "0 1 2 3 " ]  # 3: ls reading the folder
            [ "$(grep SigBlk /proc/self/status)" = "$(printf 'SigBlk:\\t0000000000000000')" ]
            ```
            """)
        #expect(outcome.succeeded, "\(report)")
    }

    @Test("descriptors a test process leaks into the script are closed, also one at 255, where bash keeps its own")
    func inheritedDescriptorsAreClosed() async throws {
        let script = try DocScript(
            document: "docs/x.md", markdown: "```sh\necho \"$(ls /proc/self/fd | tr '\\n' ' ')\"\n```\n")
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let path = folder.path + "/doc-test.sh"
        try Data(script.script(folder: folder.path).utf8).write(to: URL(fileURLWithPath: path))
        // A shell stands in for a test process that has 255 and 9 open without O_CLOEXEC.
        let run = try await runProcess(
            "/bin/bash", ["-c", "exec 255</dev/null 9</dev/null; exec bash -euo pipefail \(path)"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasSuffix("\n0 1 2 3 \n"), "\(run.stdout)")
    }

    @Test func reportsTheFailingBlockWithItsOutput() async throws {
        let (outcome, report) = try await run(
            """
            ```sh
            echo first
            ```

            ```sh
            echo "about to fail"
            false
            echo "never printed"
            ```

            ```sh
            echo "never run"
            ```
            """)
        #expect(outcome.status == 1)
        #expect(report.contains("block 2 of 3, docs/x.md:5:"), "\(report)")
        #expect(report.contains("```sh\necho \"about to fail\"\nfalse\n"), "\(report)")
        #expect(report.contains("its output:\nabout to fail"), "\(report)")
        #expect(!outcome.output.contains("never"))
    }

    @Test func killsAndReportsWhatOutlivesTheDoc() async throws {
        let (outcome, report) = try await run("```sh\nsleep 600 &\necho started\n```\n")
        #expect(outcome.status == 0)
        #expect(outcome.leftRunning)
        #expect(report.contains("background processes outlived the script"), "\(report)")
    }

    @Test func aTrapThatStopsItsJobsIsClean() async throws {
        let (outcome, report) = try await run(
            """
            ```sh
            stop() { kill $(jobs -p) 2>/dev/null || true; wait; }
            trap stop EXIT
            sleep 600 &
            ```
            """)
        #expect(outcome.succeeded, "\(report)")
    }

    /// The script is killed at its deadline, not waited for: its `sleep 600` is gone when `run`
    /// returns (checked by pid, not by a wall-clock bound a loaded machine can break; the suite's
    /// time limit is what a run that waited the 600 s would hit).
    @Test func killsADocThatRunsPastItsDeadline() async throws {
        let pidFile = try TemporaryDirectory()
        defer { pidFile.remove() }
        let (outcome, report) = try await run(
            "```sh\nsleep 600 &\necho $! > \(pidFile.path)/pid\nwait\n```\n", timeout: .seconds(1))
        #expect(outcome.status == nil)
        #expect(report.contains("did not finish within"), "\(report)")
        let pid = try #require(
            Int32(
                (try String(contentsOfFile: pidFile.path + "/pid", encoding: .utf8)).trimmingCharacters(
                    in: .whitespacesAndNewlines)))
        // Gone, or a zombie waiting for whichever process reaps orphans here.
        let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))?
            .split(separator: ")").last?.split(separator: " ").first
        #expect(state == nil || state == "Z", "the script's sleep (pid \(pid)) outlived the kill")
    }
}
