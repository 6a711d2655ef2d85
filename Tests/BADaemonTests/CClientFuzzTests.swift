import BATestSupport
import Foundation
import Testing

/// The C client's JSON reader under libFuzzer, ASan and UBSan (Fuzz/client): its seed corpus
/// replayed, then a bounded, seeded run of mutations. A finding (a crash, a leak, undefined
/// behaviour) fails the test with libFuzzer's report.
@Suite("the C client's JSON reader, fuzzed", .timeLimit(.minutes(3)))
struct CClientFuzzTests {
    @Test("the seed corpus and 20,000 seeded mutations find nothing")
    func seededCorpus() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let sources = ["json.c", "packs.c", "client.c", "files.c"].map {
            BuildProducts.source("Sources/CBAClient/" + $0)
        }
        let fuzzer = folder.path + "/json-fuzzer"
        let build = try await runProcess(
            "/usr/bin/env",
            [
                "clang", "-g", "-O1", "-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=undefined",
                "-I", BuildProducts.source("Sources/CBAClient/include"), "-o", fuzzer,
                BuildProducts.source("Fuzz/client/json_fuzzer.c"),
            ] + sources)
        #expect(build.status == 0, "\(build.stderr.suffix(2000))")
        guard build.status == 0 else { return }
        // A copy: libFuzzer adds what it finds to the folder it is given.
        let corpus = folder.path + "/corpus"
        try FileManager.default.copyItem(atPath: BuildProducts.source("Fuzz/client/corpus"), toPath: corpus)
        let run = try await runProcess(
            fuzzer, ["-runs=20000", "-seed=1", "-max_len=65536", "-artifact_prefix=" + folder.path + "/", corpus],
            environment: ["ASAN_OPTIONS": "detect_leaks=1"])
        #expect(run.status == 0, "\(run.stderr.suffix(3000))")
        #expect(run.stderr.contains("Done 20000 runs"), "\(run.stderr.suffix(1000))")
    }
}
