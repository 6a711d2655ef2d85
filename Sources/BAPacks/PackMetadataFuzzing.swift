import BACore
import BAHashing
import BAPackManifest
import Foundation

/// What a device does with pack metadata it downloads, on arbitrary bytes: the entry point of the
/// fuzzer (`Sources/PackFuzzer`, `scripts/fuzz.sh`) and of the regression tests that replay what
/// it found (`Fuzz/regressions/`, docs/fuzzing.md).
///
/// A thrown error is a correct answer to hostile bytes; only a trap, a crash, a leak or a hang
/// is a finding.
package enum PackMetadataFuzzing {
    /// What the first byte of an input asks for (its value modulo 4); the rest is the document.
    package enum Selector: UInt8, CaseIterable, Sendable {
        /// A pack index: decoded, checked, laid out in bundles, sized, and planned against itself
        /// (an update) and against nothing (a first install).
        case index = 0
        /// A download manifest (`manifest.json`) in any format (Apple's shape, format 3, too),
        /// decoded, checked, and written again, and read as an app reads a self-hosted one
        /// (``SelfHostedPackRule``).
        case manifest = 1
        /// Two pack indexes separated by a NUL byte (which JSON text never holds): each as with
        /// ``index``, then the first planned with the second installed, and with the second as
        /// another pack of the app.
        case twoIndexes = 2
        /// No JSON: the rest describes an index in binary (``structuredIndex(_:)``), which is
        /// encoded as JSON and then goes as with ``index``. A fuzzer rarely spells a number
        /// such as 4611686018427387904 in JSON text; here it flips the bytes of one.
        case structured = 3
        /// A format 2 index (first byte 0xF0 or above, which the four above never use): a root
        /// (``PackIndexRoot``), a NUL byte, then its parts' zstd frames back to back, each as long
        /// as the root says. Each part is checked as the root names it, and again with the name
        /// and length of the bytes given (a fuzzer cannot forge a SHA-256, so this is how it
        /// reaches the decompression and the part's decoder); then the whole is assembled,
        /// checked and planned as with ``index``.
        case tree = 4
        /// A Steam depot build script (first byte 0xE0 to 0xEF, which the four first never use):
        /// parsed (``KeyValues``, ``DepotScript``) and converted to a pack manifest, as `ba pack
        /// convert` does, and its exclusions matched against its mappings' paths. Not network data,
        /// but a parser of text a user is handed.
        case depotScript = 5

        /// What an input's first byte selects.
        package static func of(_ first: UInt8) -> Selector {
            if first >= 0xF0 { return .tree }
            if first >= 0xE0 { return .depotScript }
            return Selector(rawValue: first % 4) ?? .index
        }
    }

    /// Runs what `bytes` selects; returns when done, whatever the bytes (or traps: a finding).
    package static func run(_ bytes: UnsafeRawBufferPointer) {
        guard let first = bytes.first else { return }
        let document = Array(bytes.dropFirst())
        switch Selector.of(first) {
        case .tree:
            if let index = exerciseTree(document) { _ = PackPlan(target: index, installed: index) }
        case .index:
            if let index = exercise(document) {
                _ = PackPlan(target: index, installed: index)
            }
        case .manifest:
            exerciseManifest(document)
        case .depotScript:
            exerciseDepotScript(document)
        case .twoIndexes:
            let split = document.firstIndex(of: 0) ?? document.endIndex
            let first = exercise(Array(document[..<split]))
            let second = split < document.endIndex ? exercise(Array(document[(split + 1)...])) : nil
            if let first, let second {
                _ = PackPlan(target: first, installed: second)
                _ = PackPlan(target: first, installed: nil, others: [second])
            }
        case .structured:
            guard let encoded = try? JSONCoding.encoder.encode(structuredIndex(document)),
                let index = exercise(Array(encoded))
            else { return }
            _ = PackPlan(target: index, installed: index)
        }
    }

    /// A depot script, parsed and converted (nothing is read from disk: the folders are absolute).
    static func exerciseDepotScript(_ document: [UInt8]) {
        guard let script = try? DepotScript.parse(document) else { return }
        let conversion = DepotScript.Conversion(
            assetPackID: "fuzz", downloadPolicy: .onDemand, language: "en-US", scriptFolder: "/fuzz/script",
            contentRoot: nil, outputFolder: "/fuzz/out")
        guard let converted = try? script.manifest(conversion) else { return }
        for mapping in converted.manifest.fileMappings {
            _ = converted.manifest.isExcluded(mapping.localPath)
            _ = PackManifest.matches(mapping.localPath, pattern: mapping.split.name)
        }
    }

    /// An index described in binary: a byte each for the number of files (up to 3), of each
    /// file's chunks (up to 3) and of bundles (up to 3, or none), a byte picking each path and
    /// chunk name from a few, and 8 bytes (little-endian) for each size, mode, length, stored
    /// length and bundle chunk count. Missing bytes read as zeros.
    static func structuredIndex(_ document: [UInt8]) -> PackIndex {
        var reader = Reader(bytes: document)
        let paths = ["a", "b", "d/a", "d", "../e", ""]
        // A chunk or file name: one of 15 well-formed SHA-256s, or a malformed one.
        let digits = Array("0123456789abcdeZ")
        func sha256(_ byte: UInt8) -> String { String(repeating: digits[Int(byte % 16)], count: 64) }
        var files: [PackIndex.File] = []
        for _ in 0..<(reader.byte() % 4) {
            var file = PackIndex.File(
                path: paths[Int(reader.byte()) % paths.count], size: reader.int64(),
                mode: UInt32(truncatingIfNeeded: reader.int64()),
                sha256: sha256(reader.byte()), chunks: [])
            for _ in 0..<(reader.byte() % 4) {
                file.chunks.append(
                    .init(sha256: sha256(reader.byte()), length: Int(reader.int64()), storedLength: Int(reader.int64()))
                )
            }
            files.append(file)
        }
        var bundles: [PackIndex.Bundle]?
        let bundleCount = reader.byte() % 5
        if bundleCount > 0 {
            bundles = []
            for number in 1..<bundleCount {
                bundles?.append(
                    .init(path: "packs/p/1-\(number).bundle", size: reader.int64(), chunks: Int(reader.int64())))
            }
        }
        return PackIndex(
            formatVersion: 1, id: "p", version: Int(reader.int64()), userInfo: nil, downloadPolicy: .onDemand,
            chunking: try! .init(average: 256), files: files, bundles: bundles)
    }

    /// Reads bytes and little-endian integers off the front of an input, zeros past its end.
    private struct Reader {
        var bytes: [UInt8]
        var position = 0

        mutating func byte() -> UInt8 {
            defer { position += 1 }
            return position < bytes.count ? bytes[position] : 0
        }

        mutating func int64() -> Int64 {
            var value: UInt64 = 0
            for shift in stride(from: 0, to: 64, by: 8) { value |= UInt64(byte()) << UInt64(shift) }
            return Int64(bitPattern: value)
        }
    }

    /// What a device does with an index it fetched, in basd's order: it believes only what
    /// ``PackIndex/decode(_:)`` checked, then lays it out in bundles, sizes it and plans a first
    /// install. Before that, the unchecked decode's bundle layout and download size, which must
    /// stay safe on any index. The checked index, or nil if it is refused.
    private static func exercise(_ document: [UInt8]) -> PackIndex? {
        if let raw = try? JSONCoding.decoder.decode(PackIndex.self, from: Data(document)) {
            _ = raw.bundleLayout
            _ = raw.downloadSize
        }
        guard let index = try? PackIndex.decode(document) else { return nil }
        _ = index.bundleLayout
        _ = index.downloadSize
        _ = PackPlan(target: index, installed: nil)
        return index
    }

    /// A format 2 root and its parts' frames (``Selector/tree``); the assembled index, or nil.
    private static func exerciseTree(_ document: [UInt8]) -> PackIndex? {
        let split = document.firstIndex(of: 0) ?? document.endIndex
        guard let root = try? PackIndexRoot.decode(Array(document[..<split])) else { return nil }
        var rest = split < document.endIndex ? document[(split + 1)...] : []
        var files: [[PackIndex.File]] = []
        for part in root.parts {
            let frame = Array(rest.prefix(part.storedLength))
            rest = rest.dropFirst(frame.count)
            var named = part
            named.sha256 = frame.withUnsafeBytes { SHA256Hasher.hex(of: $0) }
            named.storedLength = frame.count
            let found = frame.withUnsafeBytes { buffer in
                _ = try? root.files(of: part, frame: buffer)
                return try? root.files(of: named, frame: buffer)
            }
            guard let found else { return nil }
            files.append(found)
        }
        guard let index = try? root.assemble(files) else { return nil }
        _ = index.bundleLayout
        _ = index.downloadSize
        _ = PackPlan(target: index, installed: nil)
        return index
    }

    /// A download manifest as basd reads one, in any format (Apple's shape too): decoded within
    /// bounds, then the replay rules (``ManifestTrust``) against a history and local versions taken
    /// from it. What it accepts must come back the same through the publisher's writer of its
    /// format (`userInfo` aside: JSON numbers such as `1.0` and `1` read alike).
    private static func exerciseManifest(_ document: [UInt8]) {
        guard let manifest = try? PackPublisher.DownloadManifest.decode(document) else { return }
        if let written = try? manifest.wireDocument(),
            let bytes = try? JSONCoding.encoder.encode(JSONValue.object(written))
        {
            var reread = try? PackPublisher.DownloadManifest.decode(Array(bytes))
            var original = manifest
            for index in original.assetPacks.indices { original.assetPacks[index].userInfo = nil }
            for index in reread?.assetPacks.indices ?? 0..<0 { reread?.assetPacks[index].userInfo = nil }
            precondition(reread == original, "a manifest read in format \(manifest.formatVersion) is written otherwise")
        }
        let local = Dictionary(
            manifest.assetPacks.map { ($0.assetPackID, $0.version) }, uniquingKeysWith: { first, _ in first })
        for mark in [nil, ManifestTrust.Mark(sequence: manifest.sequence ?? 1, sha256: "")] {
            _ = ManifestTrust.evaluate(
                .init(
                    manifest: manifest, sha256: "0", app: manifest.apps?.first ?? "app", signed: true,
                    now: Date(timeIntervalSince1970: 0), mark: mark, localVersions: local))
        }
        // As an app reads it itself (AssetPackManifest(from:appGroupID:)): its packs, and which
        // of them each request downloads.
        let packs = manifest.selfHostedPacks()
        for pack in packs {
            for occasion in SelfHostedPackRule.Occasion.allCases {
                _ = SelfHostedPackRule.download(
                    policy: pack.downloadPolicy, language: pack.language, on: occasion,
                    resolvedLanguage: packs.first?.language)
            }
        }
        // Localized packs: each language as basd reads it, and the choice among them (the
        // languages themselves as preferred ones, an override, a primary language).
        let languages = manifest.assetPacks.compactMap(\.language)
        let valid = manifest.assetPacks.filter(\.hasValidLanguage).compactMap(\.canonicalLanguage)
        _ = PackLanguage.resolve(
            available: valid, preferred: languages, override: languages.first, primary: languages.last)
        for language in languages { _ = PackLanguage.fromLocaleName(language) }
    }
}
