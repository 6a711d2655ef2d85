import Foundation
import Testing

@testable import BAPacks

/// Every input the fuzzer has (`Fuzz/corpus/`, its seeds) or ever found (`Fuzz/regressions/`),
/// replayed in-process through ``PackMetadataFuzzing/run(_:)``: none may trap (docs/fuzzing.md).
/// A thrown error inside is fine; a trap ends the test process, which is the failure.
@Suite("pack fuzz regressions")
struct PackFuzzRegressionTests {
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

    @Test func theFoldersHoldInputs() {
        #expect(Self.inputs("corpus").count >= 4)
        #expect(Self.inputs("regressions").count >= 9)
        // The seeds cover every selector: both decoders, the two-index plan, the binary index.
        let selectors = Set(Self.inputs("corpus").compactMap { try? Data(contentsOf: URL(fileURLWithPath: $0)).first })
        let chosen = Set(selectors.map { PackMetadataFuzzing.Selector.of($0) })
        #expect(chosen == Set(PackMetadataFuzzing.Selector.allCases))
    }

    /// The seeds are what `ba pack build` writes today: each index seed decodes and passes the
    /// install check (else scripts/fuzz-corpus.sh is due, and the fuzzer starts from stale shapes).
    @Test func theIndexSeedsAreInstallable() throws {
        for path in Self.inputs("corpus") {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            let index: PackIndex
            switch bytes.first.map({ PackMetadataFuzzing.Selector.of($0) }) {
            case .index: index = try JSONCoding.decoder.decode(PackIndex.self, from: Data(bytes.dropFirst()))
            case .structured: index = PackMetadataFuzzing.structuredIndex(Array(bytes.dropFirst()))
            default: continue
            }
            try index.checkInstallable()
            #expect(index.bundleLayout != nil, "\(path)")
        }
    }

    @Test(arguments: inputs("corpus") + inputs("regressions"))
    func runsClean(_ path: String) throws {
        try Self.replay(path)
    }

    /// Each index the fuzzer (or the issue) found trapping before the validating decoder is a
    /// lie it now refuses with the check it breaks, before any layout or plan.
    @Test(arguments: inputs("regressions"))
    func everyRegressionIsRefused(_ path: String) throws {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let document: [UInt8]
        switch bytes.first.map({ PackMetadataFuzzing.Selector.of($0) }) {
        case .index: document = Array(bytes.dropFirst())
        case .structured:
            document = Array(
                try JSONCoding.encoder.encode(PackMetadataFuzzing.structuredIndex(Array(bytes.dropFirst()))))
        default: return
        }
        let error = #expect(throws: PackError.self, "\(path)") { _ = try PackIndex.decode(document) }
        #expect(error?.code == .invalidMetadata, "\(path)")
    }
}
