import BADownloadEngine
import BAPacks
import BATestSupport
import Foundation
import Testing

@testable import BADaemon

/// A unit's sink on real files: a bundle built by `PackBuilder`, fed to a `PackUnitSink` over a
/// real `PackStaging`, as the engine would.
@Suite("a pack unit's sink")
struct PackUnitSinkTests {
    /// A pack of one 600 kB file built into `directory/public`, its plan staged in
    /// `directory/root`, and its first unit (a bundle) with that unit's bytes as published.
    static func staged(
        in directory: TemporaryDirectory
    ) throws -> (
        PackStaging, PackJob.Unit, bytes: [UInt8]
    ) {
        let source = directory.path + "/source"
        try FileManager.default.createDirectory(atPath: source + "/data", withIntermediateDirectories: true)
        var random = SeededGenerator(state: 7)
        let content = (0..<600_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        try Data(content).write(to: URL(fileURLWithPath: source + "/data/a.bin"))
        let manifest = try PackManifest.parse(
            Array(
                #"{"assetPackID": "levels", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "data"}], "platforms": ["linux"]}"#
                    .utf8))
        let index = try PackBuilder(parameters: try .init(average: 16_384)).build(
            manifest, root: source, version: 1, publishDirectory: directory.path + "/public"
        ).index
        try FileManager.default.createDirectory(atPath: directory.path + "/root", withIntermediateDirectories: true)
        let plan = PackPlan(target: index, installed: nil)
        let staging = try PackStaging(root: directory.path + "/root", plan: plan)
        _ = try staging.prepare()
        let unit = try #require(PackJob.Unit.plan(plan.items.map(\.chunk), index: index).first)
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: directory.path + "/public/" + unit.path)))
        return (staging, unit, bytes)
    }

    @Test("a stopped job's sink still in flight writes nothing more; an open one writes every frame")
    func aClosedBoxTakesNothing() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (staging, unit, bytes) = try Self.staged(in: directory)
        #expect(unit.isBundle && unit.chunks.count > 1, "\(unit.chunks.count) frame(s)")
        let box = PackJob.StagingBox(staging)
        let sink = PackUnitSink(unit: unit, staging: box) { _ in }
        #expect(sink.rewind() == 0)
        // The first frame lands; then the job stops (its box closed) while the rest is in flight.
        let first = unit.chunks[0].0.storedLength
        try bytes.withUnsafeBytes { try sink.take(UnsafeRawBufferPointer(rebasing: $0.prefix(first))) }
        let afterFirst = staging.bytesPresent
        #expect(afterFirst == Int64(unit.chunks[0].0.length))
        box.close()
        let stopped = #expect(throws: DownloadError.self) {
            try bytes.withUnsafeBytes { try sink.take(UnsafeRawBufferPointer(rebasing: $0.dropFirst(first))) }
        }
        #expect(stopped?.code == .cancelled, "\(String(describing: stopped))")
        #expect(staging.bytesPresent == afterFirst, "a closed box took a frame")
        #expect(sink.rejection == nil, "a stop is not the server's fault")

        // The same bytes through an open box: every frame lands.
        let open = PackUnitSink(unit: unit, staging: PackJob.StagingBox(staging)) { _ in }
        _ = open.rewind()
        try bytes.withUnsafeBytes { try open.take(UnsafeRawBufferPointer(rebasing: $0.dropFirst(first))) }
        try open.finish()
        #expect(staging.needed.isEmpty)
    }
}
