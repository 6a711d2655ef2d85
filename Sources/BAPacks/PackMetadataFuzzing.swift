import Foundation

/// What a device does with pack metadata it downloads, on arbitrary bytes: the entry point of the
/// fuzzer (`Sources/PackFuzzer`, `scripts/fuzz.sh`) and of the regression tests that replay what
/// it found (`Fuzz/regressions/`, docs/fuzzing.md).
///
/// A thrown error is a correct answer to hostile bytes; only a trap, a crash, a leak or a hang
/// is a finding.
package enum PackMetadataFuzzing {
    /// What the first byte of an input asks for (its value modulo 3); the rest is the document.
    package enum Selector: UInt8, CaseIterable, Sendable {
        /// A pack index: decoded, checked, laid out in bundles, sized, and planned against itself
        /// (an update) and against nothing (a first install).
        case index = 0
        /// A download manifest (`manifest.json`), decoded.
        case manifest = 1
        /// Two pack indexes separated by a NUL byte (which JSON text never holds): each as with
        /// ``index``, then the first planned with the second installed, and with the second as
        /// another pack of the app.
        case twoIndexes = 2
    }

    /// Runs what `bytes` selects; returns when done, whatever the bytes (or traps: a finding).
    package static func run(_ bytes: UnsafeRawBufferPointer) {
        guard let first = bytes.first, let selector = Selector(rawValue: first % 3) else { return }
        let document = Array(bytes.dropFirst())
        switch selector {
        case .index:
            if let index = exercise(document) {
                _ = PackPlan(target: index, installed: index)
            }
        case .manifest:
            _ = try? decodeManifest(document)
        case .twoIndexes:
            let split = document.firstIndex(of: 0) ?? document.endIndex
            let first = exercise(Array(document[..<split]))
            let second = split < document.endIndex ? exercise(Array(document[(split + 1)...])) : nil
            if let first, let second {
                _ = PackPlan(target: first, installed: second)
                _ = PackPlan(target: first, installed: nil, others: [second])
            }
        }
    }

    /// Decodes a pack index and does with it what a device does before staging, in basd's order
    /// (PackJob plans before ``PackStaging`` checks the index): the check, its bundle layout, its
    /// download size, and a plan for a first install. The index, or nil if it does not decode.
    private static func exercise(_ document: [UInt8]) -> PackIndex? {
        guard let index = try? decodeIndex(document) else { return nil }
        try? index.checkInstallable()
        _ = index.bundleLayout
        _ = index.downloadSize
        _ = PackPlan(target: index, installed: nil)
        return index
    }

    /// A pack index as basd decodes one today (PackJob, ``PackIndex/read(_:)``).
    private static func decodeIndex(_ document: [UInt8]) throws -> PackIndex {
        try JSONCoding.decoder.decode(PackIndex.self, from: Data(document))
    }

    /// A download manifest as basd decodes one today (PackService).
    private static func decodeManifest(_ document: [UInt8]) throws -> PackPublisher.DownloadManifest {
        try JSONCoding.decoder.decode(PackPublisher.DownloadManifest.self, from: Data(document))
    }
}
