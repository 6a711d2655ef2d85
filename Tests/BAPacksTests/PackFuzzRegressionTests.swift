import Foundation
import Testing

@testable import BAPacks

/// Every input the fuzzer has (`Fuzz/corpus/`, its seeds) or ever found (`Fuzz/regressions/`),
/// replayed in-process through ``PackMetadataFuzzing/run(_:)``: none may trap (docs/fuzzing.md).
/// A thrown error inside is fine; a trap ends the test process, which is the failure.
@Suite("pack fuzz regressions")
struct PackFuzzRegressionTests {
    /// The regression files that trap with today's decoder (`JSONDecoder`, then unchecked sums
    /// and ranges): replayed by ``trapsTodayRunClean(_:)``, disabled until the validating decoder
    /// (`PackIndex.decode`, `DownloadManifest.decode`) lands. Empty it then, and delete that test.
    static let trapsToday: Set<String> = [
        "fuzzed-bundle-chunk-counts-overflow",  // PackIndex.bundleLayout: the bundles' chunk counts summed
        "fuzzed-download-size-overflow",  // PackIndex.downloadSize: the stored lengths summed
        "fuzzed-index-bundles-of-minus-4-and-5-chunks",  // PackIndex.bundleLayout: a Range upside down
        "fuzzed-plan-chunk-offset-overflow",  // PackPlan.init: a chunk's offset in its file
        "fuzzed-plan-fetch-bytes-overflow",  // PackPlan.init: the bytes to fetch summed
        "fuzzed-plan-total-size-overflow",  // PackPlan.init: the file sizes summed
        "index-bundle-chunks-minus-1",  // PackIndex.bundleLayout: a Range upside down
        "index-two-chunks-of-4EiB",  // PackIndex.checkInstallable: a file's chunk lengths summed
    ]

    /// `Fuzz/<folder>`'s files, sorted, found from this source file's path.
    static func inputs(_ folder: String) -> [String] {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/\(folder)").path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { directory + "/" + $0 }
    }

    static func replay(_ path: String) throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes.withUnsafeBytes { PackMetadataFuzzing.run($0) }
    }

    static func trapsTodayFile(_ path: String) -> Bool {
        trapsToday.contains(URL(fileURLWithPath: path).lastPathComponent)
    }

    @Test func theFoldersHoldInputs() {
        #expect(Self.inputs("corpus").count >= 4)
        let regressions = Set(Self.inputs("regressions").map { URL(fileURLWithPath: $0).lastPathComponent })
        #expect(regressions.isSuperset(of: Self.trapsToday), "a name in trapsToday has no file")
        // The seeds cover every selector: both decoders, the two-index plan, the binary index.
        let selectors = Set(Self.inputs("corpus").compactMap { try? Data(contentsOf: URL(fileURLWithPath: $0)).first })
        let chosen = Set(selectors.compactMap { PackMetadataFuzzing.Selector(rawValue: $0 % 4) })
        #expect(chosen == Set(PackMetadataFuzzing.Selector.allCases))
    }

    /// The seeds are what `ba pack build` writes today: each index seed decodes and passes the
    /// install check (else scripts/fuzz-corpus.sh is due, and the fuzzer starts from stale shapes).
    @Test func theIndexSeedsAreInstallable() throws {
        for path in Self.inputs("corpus") {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            let index: PackIndex
            switch bytes.first.flatMap({ PackMetadataFuzzing.Selector(rawValue: $0 % 4) }) {
            case .index: index = try JSONCoding.decoder.decode(PackIndex.self, from: Data(bytes.dropFirst()))
            case .structured: index = PackMetadataFuzzing.structuredIndex(Array(bytes.dropFirst()))
            default: continue
            }
            try index.checkInstallable()
            #expect(index.bundleLayout != nil, "\(path)")
        }
    }

    @Test(arguments: inputs("corpus") + inputs("regressions").filter { !trapsTodayFile($0) })
    func runsClean(_ path: String) throws {
        try Self.replay(path)
    }

    @Test(.disabled("until the validating decoder lands"), arguments: inputs("regressions").filter(trapsTodayFile))
    func trapsTodayRunClean(_ path: String) throws {
        try Self.replay(path)
    }
}
