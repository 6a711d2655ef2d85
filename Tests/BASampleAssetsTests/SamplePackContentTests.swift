import BASampleAssets
import Foundation
import Testing

/// The sample app's pack content (`Examples/SampleApp/packs/content.json`): the committed file's
/// shape, and what writing version 1 and applying an update do to the files.
@Suite struct SamplePackContentTests {
    static let packs = SampleAssetsTests.examples.appendingPathComponent("SampleApp/packs")

    /// A scratch folder, removed by the caller.
    static func scratch() throws -> String {
        let path = NSTemporaryDirectory() + "/sample-pack-content-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func bytes(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

    @Test func theCommittedContentFitsThePacksAndTheDemo() throws {
        let content = try SamplePackContent.read(from: Self.packs.appendingPathComponent("content.json").path)
        // Each file is in the folder one pack's manifest selects.
        let folders = ["base": "Base", "levels": "Levels", "extras": "Extras"]
        for (id, folder) in folders {
            let manifest =
                try JSONSerialization.jsonObject(
                    with: Data(contentsOf: Self.packs.appendingPathComponent("\(id).json"))) as? [String: Any]
            #expect(manifest?["assetPackID"] as? String == id)
            #expect((manifest?["fileSelectors"] as? [[String: String]]) == [["directory": folder]])
        }
        #expect(content.files.allSatisfy { file in folders.values.contains { file.path.hasPrefix($0 + "/") } })
        // levels is about 48 MiB over several files; its update changes a small share of it.
        let levels = content.files.filter { $0.path.hasPrefix("Levels/") }
        let levelsSize = levels.reduce(0) { $0 + $1.generate.size }
        #expect(levels.count >= 4 && levelsSize == 48 << 20)
        let update = try #require(content.updates.first { $0.pack == "levels" })
        #expect(update.version == 2)
        let changed = update.edits.reduce(0) { $0 + $1.generate.size }
        #expect(changed * 20 < levelsSize, "the update should change under 5 % of levels")
        // Every edit of an existing file falls inside it.
        for edit in update.edits {
            let file = levels.first { $0.path == edit.path }
            guard let offset = edit.offset else {
                #expect(file == nil, "\(edit.path): a new file that version 1 has already")
                continue
            }
            let size = try #require(file?.generate.size, "\(edit.path) is not in version 1")
            #expect(offset + (edit.replace ?? 0) <= size, "\(edit.path): the edit is outside the file")
        }
    }

    @Test func writingAndUpdatingTheFiles() throws {
        let json = """
            {"files": [{"path": "A/one.bin", "generate": {"seed": 1, "size": 100}},
                       {"path": "A/two.bin", "generate": {"seed": 2, "size": 50}}],
             "updates": [{"pack": "a", "version": 2, "edits": [
                 {"path": "A/one.bin", "offset": 10, "replace": 5, "generate": {"seed": 3, "size": 5}},
                 {"path": "A/two.bin", "offset": 50, "replace": 0, "generate": {"seed": 4, "size": 8}},
                 {"path": "A/three.bin", "generate": {"seed": 5, "size": 7}}]},
               {"pack": "a", "version": 3, "edits": [
                 {"path": "A/one.bin", "offset": 99, "replace": 2, "generate": {"seed": 6, "size": 1}}]}]}
            """
        let root = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data(json.utf8).write(to: URL(fileURLWithPath: root + "/content.json"))
        let content = try SamplePackContent.read(from: root + "/content.json")
        try content.writeFiles(into: root + "/v")
        let one = SampleAssets.bytes(seed: 1, size: 100)
        let two = SampleAssets.bytes(seed: 2, size: 50)
        #expect(try Self.bytes(root + "/v/A/one.bin") == one)
        #expect(try Self.bytes(root + "/v/A/two.bin") == two)
        try content.apply(content.updates[0], in: root + "/v")
        // Replaced in place, inserted at the end, and a new file.
        #expect(
            try Self.bytes(root + "/v/A/one.bin")
                == Array(one[..<10]) + SampleAssets.bytes(seed: 3, size: 5) + Array(one[15...]))
        #expect(try Self.bytes(root + "/v/A/two.bin") == two + SampleAssets.bytes(seed: 4, size: 8))
        #expect(try Self.bytes(root + "/v/A/three.bin") == SampleAssets.bytes(seed: 5, size: 7))
        // An edit outside its file is refused, saying which, and changes nothing.
        let before = try Self.bytes(root + "/v/A/one.bin")
        #expect {
            try content.apply(content.updates[1], in: root + "/v")
        } throws: { "\($0)".contains("A/one.bin (offset 99, replace 2) is outside its 100 bytes") }
        #expect(try Self.bytes(root + "/v/A/one.bin") == before)
        #expect(throws: SamplePackContent.ContentError.self) { try SamplePackContent.read(from: root + "/none.json") }
    }
}
