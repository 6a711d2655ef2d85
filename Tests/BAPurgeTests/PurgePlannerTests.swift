import Foundation
import Testing

@testable import BAPurge

#if canImport(Glibc)
    import Glibc
#endif

/// Which files a plan picks, and what carrying it out does, with real files.
@Suite struct PurgePlannerTests {
    @Test func leastRecentlyUsedGoFirst() throws {
        let container = try TestContainer()
        defer { container.remove() }
        // Same finish time and modification time; only the access times differ.
        let (recent, _) = try container.deliverAndMove("recent", accessed: day(9))
        let (oldest, _) = try container.deliverAndMove("oldest", accessed: day(2))
        let (middle, _) = try container.deliverAndMove("middle", accessed: day(5))

        let plan = PurgePlanner().plan(
            assets: [recent, oldest, middle], roots: [container.root], freeBytes: 0, thresholdBytes: 1 << 40)
        #expect(plan.deletions.map(\.asset.identifier) == ["oldest", "middle", "recent"])
        #expect(plan.entries.map(\.asset.identifier) == ["recent", "oldest", "middle"], "entries keep their order")
        #expect(plan.plannedBytes == 300 && plan.purgeableBytes == 300 && plan.bytesNeeded == 1 << 40)
    }

    @Test func stopsOnceTheThresholdIsReached() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let (a, _) = try container.deliverAndMove("a", accessed: day(2))
        let (b, _) = try container.deliverAndMove("b", accessed: day(3))
        let (c, _) = try container.deliverAndMove("c", accessed: day(4))

        // 1000 free, 1150 wanted: 150 to free, so two 100-byte files.
        let plan = PurgePlanner().plan(
            assets: [a, b, c], roots: [container.root], freeBytes: 1000, thresholdBytes: 1150)
        #expect(plan.bytesNeeded == 150)
        #expect(plan.deletions.map(\.asset.identifier) == ["a", "b"])
        #expect(plan.plannedBytes == 200 && plan.purgeableBytes == 300)
        #expect(plan.entries.map(\.willDelete) == [true, true, false])
    }

    @Test func nothingIsPlannedAboveTheThreshold() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let (a, _) = try container.deliverAndMove("a")
        let plan = PurgePlanner().plan(assets: [a], roots: [container.root], freeBytes: 2000, thresholdBytes: 1000)
        #expect(plan.bytesNeeded == 0 && plan.deletions.isEmpty && plan.plannedBytes == 0)
        #expect(plan.purgeableBytes == 100)
        #expect(plan.entries.first?.reason.hasPrefix("purgeable: ") == true)
    }

    @Test func executeDeletesPlannedFilesAndKeepsOneModifiedSincePlanning() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let (a, pathA) = try container.deliverAndMove("a", accessed: day(2))
        let (b, pathB) = try container.deliverAndMove("b", accessed: day(3))
        let pending = try container.deliver("pending")

        let plan = PurgePlanner().plan(
            assets: [a, b, pending], roots: [container.root], freeBytes: 0, thresholdBytes: 1 << 40)
        #expect(plan.deletions.map(\.asset.identifier) == ["a", "b"])
        try container.append(to: pathB)

        let results = Purger().execute(plan)
        #expect(results.map(\.path) == [pathA, pathB])
        #expect(results.first?.outcome == .deleted(bytes: 100))
        #expect(results.last?.outcome == .kept(reason: "kept: modified since planning (size 100 → 104)"))
        #expect(!FileManager.default.fileExists(atPath: pathA))
        #expect(FileManager.default.fileExists(atPath: pathB))
        #expect(FileManager.default.fileExists(atPath: pending.deliveredPath), "never planned, never deleted")
    }

    @Test func executeKeepsAFileOpenedOrReplacedSincePlanning() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let (a, pathA) = try container.deliverAndMove("a", accessed: day(2))
        let (b, pathB) = try container.deliverAndMove("b", accessed: day(3))
        let plan = PurgePlanner().plan(assets: [a, b], roots: [container.root], freeBytes: 0, thresholdBytes: 1 << 40)

        let handle = try #require(FileHandle(forReadingAtPath: pathA))
        defer { try? handle.close() }
        // Same bytes and times, but a new inode, as a copy renamed over it leaves (made while the
        // old file exists, so the filesystem cannot hand it the old inode number).
        try Data(repeating: 0x61, count: 100).write(to: URL(fileURLWithPath: pathB + ".new"))
        try setTimes(pathB + ".new", accessed: day(3), modified: day(1))
        #expect(rename(pathB + ".new", pathB) == 0)

        let results = Purger().execute(plan)
        #expect(
            results.map(\.outcome) == [
                .kept(reason: "kept: open by pid \(getpid())"),
                .kept(reason: "kept: replaced by another file since planning"),
            ])
        #expect(FileManager.default.fileExists(atPath: pathA) && FileManager.default.fileExists(atPath: pathB))
    }

    @Test func summaryEncodesEveryAssetForJSON() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let (a, pathA) = try container.deliverAndMove("a", finishedAt: day(20), accessed: day(21))
        let gone = try container.deliver("gone")
        try FileManager.default.removeItem(atPath: gone.deliveredPath)

        let plan = PurgePlanner().plan(assets: [a, gone], roots: [container.root], freeBytes: 10, thresholdBytes: 60)
        let summary = PurgeSummary(plan)
        #expect(
            summary.assets == [
                PurgeSummary.Asset(
                    appID: "com.example.test", identifier: "a", downloadUniqueID: a.downloadUniqueID, path: pathA,
                    size: 100, status: "purgeable",
                    reason: "purgeable: unmodified since it finished 2026-11-20, last used 2026-11-21",
                    wouldDelete: true),
                PurgeSummary.Asset(
                    appID: "com.example.test", identifier: "gone", downloadUniqueID: gone.downloadUniqueID, path: nil,
                    size: 100, status: "missing", reason: "gone: no longer in the app group container",
                    wouldDelete: false),
            ])
        #expect(summary.bytesNeeded == 50 && summary.plannedBytes == 100)

        let json = try JSONEncoder().encode(summary)
        #expect(try JSONDecoder().decode(PurgeSummary.self, from: json) == summary)
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        let assets = try #require(object["assets"] as? [[String: Any]])
        #expect(assets[0]["wouldDelete"] as? Bool == true && assets[0]["status"] as? String == "purgeable")
        #expect(assets[1]["path"] == nil)
    }

    @Test func trackedAssetRoundTripsThroughJSON() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let asset = try container.deliver("a", finishedAt: day(3))
        let decoded = try JSONDecoder().decode(TrackedAsset.self, from: JSONEncoder().encode(asset))
        #expect(decoded == asset)
        #expect(asset.size == 100 && asset.modificationTimeNanoseconds == 1_793_534_400 * 1_000_000_000)
    }

    @Test func freeBytesReadsTheFilesystem() throws {
        #expect(try PurgePlanner.freeBytes(path: FileManager.default.temporaryDirectory.path) > 0)
        #expect(throws: PurgeError.self) { try PurgePlanner.freeBytes(path: "/nonexistent-\(UUID().uuidString)") }
    }
}
