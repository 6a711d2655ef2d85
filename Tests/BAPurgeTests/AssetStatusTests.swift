import Foundation
import Testing

@testable import BAPurge

#if canImport(Glibc)
    import Glibc
#endif

/// Where tracked assets are found and what they are, with real files in a temporary container.
@Suite struct AssetStatusTests {
    /// Plans with no free space and a threshold past every file, so every purgeable file is planned.
    func planUnderPressure(_ assets: [TrackedAsset], in container: TestContainer) -> PurgePlan {
        PurgePlanner().plan(assets: assets, roots: [container.root], freeBytes: 0, thresholdBytes: 1 << 40)
    }

    @Test func movedFileIsFoundByInode() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let (asset, path) = try container.deliverAndMove("level-1", finishedAt: day(20), accessed: day(21))

        let found = AssetLocator().locate([asset], roots: [container.root])
        #expect(found.files(of: asset).map(\.path) == [path])
        #expect(!found.truncated)

        let entry = try #require(planUnderPressure([asset], in: container).entries.first)
        #expect(entry.status == .purgeable(path: path, size: 100, lastUsed: day(21)))
        #expect(entry.reason == "purgeable: unmodified since it finished 2026-11-20, last used 2026-11-21")
        #expect(entry.willDelete)
    }

    @Test func lastUsedIsTheFinishTimeWhenTheAccessTimeIsOlder() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let (asset, path) = try container.deliverAndMove("level-1", finishedAt: day(5), accessed: day(2))
        let entry = try #require(planUnderPressure([asset], in: container).entries.first)
        #expect(entry.status == .purgeable(path: path, size: 100, lastUsed: day(5)))
    }

    @Test func aCopyHasANewInodeSoTheAssetIsMissing() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let asset = try container.deliver("level-1")
        try FileManager.default.copyItem(atPath: asset.deliveredPath, toPath: container.root + "/Library/copy")
        try FileManager.default.removeItem(atPath: asset.deliveredPath)

        let plan = planUnderPressure([asset], in: container)
        let entry = try #require(plan.entries.first)
        #expect(entry.status == .missing)
        #expect(entry.path == nil && !entry.willDelete)
        #expect(entry.reason == "gone: no longer in the app group container")
        #expect(plan.deletions.isEmpty)
    }

    @Test func aFileMovedOutOfTheContainerIsMissing() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let asset = try container.deliver("level-1")
        try FileManager.default.moveItem(atPath: asset.deliveredPath, toPath: container.base + "/outside")
        #expect(planUnderPressure([asset], in: container).entries.first?.status == .missing)
    }

    @Test func symlinksAreNotFollowed() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let asset = try container.deliver("level-1")
        try FileManager.default.moveItem(atPath: asset.deliveredPath, toPath: container.base + "/outside")
        try FileManager.default.createSymbolicLink(
            atPath: container.root + "/Library/link", withDestinationPath: container.base + "/outside")
        try FileManager.default.createSymbolicLink(
            atPath: container.root + "/Library/dirlink", withDestinationPath: container.base)
        #expect(AssetLocator().locate([asset], roots: [container.root]).files(of: asset).isEmpty)
    }

    @Test func anAppendedFileIsModifiedAndNeverPurged() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let (asset, path) = try container.deliverAndMove("level-1")
        try container.append(to: path)

        let plan = planUnderPressure([asset], in: container)
        let entry = try #require(plan.entries.first)
        guard case .modified(let modification) = entry.status else {
            Issue.record("expected modified, got \(entry.status)")
            return
        }
        #expect(modification.recordedSize == 100 && modification.size == 104)
        #expect(entry.reason == "kept: modified (size 100 → 104), or its inode now holds another file")
        // The size reported is the asset's own: after inode reuse the file there is a stranger.
        #expect(entry.size == 100)
        #expect(entry.path == path && !entry.willDelete && plan.deletions.isEmpty && plan.purgeableBytes == 0)
    }

    @Test func aChangedModificationTimeIsAModification() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let (asset, path) = try container.deliverAndMove("level-1")
        try setTimes(path, accessed: day(1), modified: day(3))
        let entry = try #require(planUnderPressure([asset], in: container).entries.first)
        #expect(
            entry.reason
                == "kept: modified (modification time 2026-11-01T12:00:00Z → 2026-11-03T12:00:00Z), or its inode now holds another file"
        )
        #expect(!entry.willDelete)
    }

    @Test func aFileHeldOpenIsInUseByThisProcess() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let (asset, path) = try container.deliverAndMove("level-1")
        let handle = try #require(FileHandle(forReadingAtPath: path))
        defer { try? handle.close() }

        let plan = planUnderPressure([asset], in: container)
        let entry = try #require(plan.entries.first)
        #expect(entry.status == .inUse(pids: [getpid()]))
        #expect(entry.reason == "kept: open by pid \(getpid())")
        #expect(!entry.willDelete && plan.deletions.isEmpty)

        try handle.close()
        #expect(planUnderPressure([asset], in: container).entries.first?.willDelete == true, "closed: purgeable")
    }

    @Test func aFileMappedAfterItsDescriptorClosedIsInUse() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let (asset, path) = try container.deliverAndMove("level-1")
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        let mapping = mmap(nil, 100, PROT_READ, MAP_PRIVATE, fd, 0)
        close(fd)
        try #require(mapping != MAP_FAILED)
        defer { munmap(mapping, 100) }
        #expect(planUnderPressure([asset], in: container).entries.first?.status == .inUse(pids: [getpid()]))
    }

    @Test func aFileStillAtItsDeliveryPathIsPendingDelivery() throws {
        let container = try TestContainer()
        defer { container.remove() }
        let asset = try container.deliver("level-1")

        let plan = planUnderPressure([asset], in: container)
        let entry = try #require(plan.entries.first)
        #expect(entry.status == .pendingDelivery(path: asset.deliveredPath))
        #expect(entry.reason == "kept: not yet delivered to the app")
        #expect(!entry.willDelete && plan.deletions.isEmpty)
    }

    @Test func aTruncatedWalkSaysSoInsteadOfGone() throws {
        let container = try TestContainer()
        defer { container.remove() }
        for index in 0..<5 {
            #expect(FileManager.default.createFile(atPath: container.root + "/Library/filler-\(index)", contents: nil))
        }
        let (asset, _) = try container.deliverAndMove("zz-level-1")
        let planner = PurgePlanner(locator: AssetLocator(maxEntriesVisited: 3))
        let plan = planner.plan(assets: [asset], roots: [container.root], freeBytes: 0, thresholdBytes: 1 << 40)
        #expect(plan.scanTruncated)
        let entry = try #require(plan.entries.first)
        #expect(entry.status == .missing)
        #expect(entry.reason == "gone or not reached: not found in the first 3 entries of the app group containers")
    }

    @Test func parsesMapsAndBuildsDevicesAsGlibcDoes() {
        let text = """
            55d0c0a00000-55d0c0a28000 r--p 00000000 fe:00 1835042                    /usr/bin/cat
            7f1e2c000000-7f1e2c021000 rw-p 00000000 00:00 0
            7ffd5b3c1000-7ffd5b3e2000 rw-p 00000000 00:00 0                          [stack]
            7f1e2c200000-7f1e2c201000 r--s 00000000 103:02 77                         /data/a file with spaces
            """
        #expect(
            OpenFiles.parseMaps(text) == [
                FileKey(device: 65024, inode: 1_835_042), FileKey(device: 0x10302, inode: 77),
            ])
        #expect(OpenFiles.makeDevice(major: 0x1000, minor: 0x12345) == 0x0000_1000_1230_0045)
    }
}
