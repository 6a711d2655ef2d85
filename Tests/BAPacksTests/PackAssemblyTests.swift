import BATestSupport
import Foundation
import Synchronization
import Testing

@testable import BAPacks

/// The device's side on real files: versions built with `PackBuilder` into a publish folder, then
/// assembled in a container from the frames in its `chunks/` (standing in for the network):
/// fresh installs, delta updates, resumes, damage, hostile links and paths, the atomic switch,
/// removal and holders.
@Suite("pack assembly")
struct PackAssemblyTests {
    typealias Folder = PackBuildTests.Folder

    /// A source folder, a publish folder and a container, removed by `remove()`.
    struct World {
        let source: Folder
        let publish: Folder
        let container: Folder
        let builder: PackBuilder

        init(average: Int = 16_384) throws {
            source = try Folder()
            publish = try Folder()
            container = try Folder()
            builder = PackBuilder(parameters: try .init(average: average))
        }

        var root: String { container.path }
        var packs: String { root + "/.background-assets/packs/levels" }

        func build(_ version: Int) throws -> PackIndex {
            try builder.build(
                try PackBuildTests.manifest(), root: source.path, version: version, publishDirectory: publish.path
            ).index
        }

        func frame(_ sha256: String) throws -> [UInt8] {
            Array(try Data(contentsOf: URL(fileURLWithPath: publish.path + "/" + PackIndex.chunkPath(sha256))))
        }

        /// Assembles `target` from `installed`, finishes and switches to it.
        @discardableResult
        func install(_ target: PackIndex, from installed: PackIndex?) throws -> (PackPlan, Set<String>) {
            let plan = PackPlan(target: target, installed: installed)
            let staging = try PackStaging(root: root, plan: plan)
            let needed = try staging.prepare()
            let fetched = try staging.copyFromInstalled(needed)
            for sha256 in fetched { try accept(staging, sha256) }
            #expect(staging.needed.isEmpty && staging.bytesPresent == plan.totalBytes)
            try staging.finish()
            try PackInstallation.switchCurrent(root: root, id: target.id, version: target.version)
            return (plan, fetched)
        }

        func accept(_ staging: PackStaging, _ sha256: String, frame: [UInt8]? = nil) throws {
            let bytes = try frame ?? self.frame(sha256)
            try bytes.withUnsafeBytes { try staging.accept(sha256: sha256, frame: $0) }
        }

        func read(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

        func remove() {
            for folder in [source, publish, container] {
                PackAssemblyTests.makeWritable(folder.path)
                folder.remove()
            }
        }
    }

    /// Gives every folder under `path` its owner's write bit back, so it can be removed.
    static func makeWritable(_ path: String) {
        chmod(path, 0o755)
        guard let walker = FileManager.default.enumerator(atPath: path) else { return }
        while let relative = walker.nextObject() as? String {
            var info = stat()
            if lstat(path + "/" + relative, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
                chmod(path + "/" + relative, 0o755)
            }
        }
    }

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        lstat(path, &info)
        return info.st_mode & 0o7777
    }

    static func random(_ count: Int, _ seed: UInt64) -> [UInt8] {
        ContentDefinedChunkerTests.randomBytes(count, seed: seed)
    }

    /// A v1 with a big file, a sub-folder executable, an empty file and a small file.
    static func version1(_ world: World) throws -> PackIndex {
        try world.source.write(random(1 << 20, 1), to: "Levels/a.bin")
        try world.source.write(random(300_000, 2), to: "Levels/sub/b.bin", mode: 0o755)
        try world.source.write([], to: "Levels/empty.bin")
        try world.source.write(random(5_000, 3), to: "intro.bin")
        return try world.build(1)
    }

    @Test func aFreshInstallIsTheSourceReadOnlyBehindTheLink() throws {
        let world = try World()
        defer { world.remove() }
        let v1 = try Self.version1(world)
        let (plan, fetched) = try world.install(v1, from: nil)
        #expect(fetched == Set(plan.fetch.map(\.sha256)))
        #expect(try PackInstallation.current(root: world.root, id: "levels") == 1)
        #expect(
            try FileManager.default.destinationOfSymbolicLink(atPath: world.root + "/AssetPacks/levels")
                == "../.background-assets/packs/levels/1")
        for path in ["Levels/a.bin", "Levels/sub/b.bin", "Levels/empty.bin", "intro.bin"] {
            #expect(
                try world.read(world.root + "/AssetPacks/levels/" + path) == world.read(world.source.path + "/" + path))
        }
        let version = world.packs + "/1"
        #expect(Self.mode(version + "/Levels/a.bin") == 0o444)
        #expect(Self.mode(version + "/Levels/sub/b.bin") == 0o555)
        #expect(Self.mode(version + "/Levels/sub") == 0o555 && Self.mode(version) == 0o555)
        #expect(try PackInstallation.versions(root: world.root, id: "levels") == [1])
        #expect(!FileManager.default.fileExists(atPath: world.packs + "/1.staging"))
        // Preparing a finished version again finds it complete: nothing needed, nothing to do.
        let again = try PackStaging(root: world.root, plan: plan)
        #expect(try again.prepare().isEmpty && again.bytesPresent == plan.totalBytes)
        #expect(try again.copyFromInstalled(Set(plan.fetch.map(\.sha256))).isEmpty)
        try again.finish()
    }

    @Test func anUpdateFetchesOnlyWhatChanged() throws {
        let world = try World(average: 65_536)
        defer { world.remove() }
        var world8 = Self.random(6 << 20, 4)
        try world.source.write(world8, to: "Levels/world.bin")
        try world.source.write(Self.random(200_000, 5), to: "Levels/rewritten.bin")
        try world.source.write(Self.random(100_000, 6), to: "intro.bin")
        let v1 = try world.build(1)
        try world.install(v1, from: nil)
        world8.insert(42, at: 3_000_000)
        try world.source.write(world8, to: "Levels/world.bin")
        try world.source.write(Self.random(200_000, 7), to: "Levels/rewritten.bin")
        let v2 = try world.build(2)
        let rewritten = try #require(v2.files.first { $0.path == "Levels/rewritten.bin" })
        let (plan, fetched) = try world.install(v2, from: v1)
        #expect(plan.fetch.count <= 3 + rewritten.chunks.count, "\(plan.fetch.count) chunks fetched")
        #expect(fetched == Set(plan.fetch.map(\.sha256)))
        #expect(plan.reusedBytes > 5 << 20)
        #expect(try PackInstallation.current(root: world.root, id: "levels") == 2)
        for path in ["Levels/world.bin", "Levels/rewritten.bin", "intro.bin"] {
            #expect(
                try world.read(world.root + "/AssetPacks/levels/" + path) == world.read(world.source.path + "/" + path))
        }
        // The old version is read-only; removing it works, and the current one is refused.
        #expect(try PackInstallation.versions(root: world.root, id: "levels") == [1, 2])
        try PackInstallation.remove(root: world.root, id: "levels", version: 1)
        #expect(try PackInstallation.versions(root: world.root, id: "levels") == [2])
        #expect {
            try PackInstallation.remove(root: world.root, id: "levels", version: 2)
        } throws: { "\($0)".contains("current") }
    }

    @Test func anUnchangedFileIsLinkedNotCopiedAndAChangedOneIsNot() throws {
        let world = try World(average: 65_536)
        defer { world.remove() }
        try world.source.write(Self.random(1 << 20, 11), to: "Levels/same.bin")
        try world.source.write(Self.random(1 << 20, 12), to: "Levels/tampered.bin")
        try world.source.write(Self.random(300_000, 13), to: "Levels/changed.bin")
        try world.source.write(Self.random(1_000, 15), to: "intro.bin")
        let v1 = try world.build(1)
        try world.install(v1, from: nil)
        // The app changes a byte of a file it made writable (same size, other bytes).
        let tampered = world.root + "/AssetPacks/levels/Levels/tampered.bin"
        Self.makeWritable(tampered)
        let fd = open(tampered, O_WRONLY)
        var byte: UInt8 = 0x33
        #expect(pwrite(fd, &byte, 1, 10) == 1)
        close(fd)
        #expect(chmod(tampered, 0o444) == 0)
        try world.source.write(Self.random(300_000, 14), to: "Levels/changed.bin")
        let v2 = try world.build(2)
        let (plan, _) = try world.install(v2, from: v1)
        #expect(plan.unchangedFiles.count == 3)
        // The tampered file comes back as published.
        #expect(
            try world.read(world.root + "/AssetPacks/levels/Levels/tampered.bin")
                == world.read(world.source.path + "/Levels/tampered.bin"))
        func inode(_ path: String) -> ino_t {
            var info = stat()
            return stat(path, &info) == 0 ? info.st_ino : 0
        }
        let versions = world.root + "/" + PackInstallation.packsFolder(id: "levels")
        // The untouched file is the same file in both versions; the tampered one was assembled anew.
        #expect(inode(versions + "/1/Levels/same.bin") == inode(versions + "/2/Levels/same.bin"))
        #expect(inode(versions + "/1/Levels/tampered.bin") != inode(versions + "/2/Levels/tampered.bin"))
        for path in ["Levels/same.bin", "Levels/changed.bin"] {
            #expect(
                try world.read(world.root + "/AssetPacks/levels/" + path) == world.read(world.source.path + "/" + path))
        }
    }

    @Test func aResumeKeepsWhatIsStagedAndFindsDamage() throws {
        let world = try World()
        defer { world.remove() }
        let v1 = try Self.version1(world)
        let plan = PackPlan(target: v1, installed: nil)
        let order = plan.fetch.map(\.sha256)
        let half = order.count / 2
        do {
            let first = try PackStaging(root: world.root, plan: plan)
            #expect(try first.prepare() == Set(order))
            #expect(first.bytesPresent == 0)
            for sha256 in order[..<half] { try world.accept(first, sha256) }
        }  // dropped without finish(), as a kill -9 would
        let second = try PackStaging(root: world.root, plan: plan)
        #expect(try second.prepare() == Set(order[half...]))
        let presentBytes = order[..<half].reduce(Int64(0)) { sum, sha256 in
            let item = plan.item(sha256)!
            return sum + Int64(item.chunk.length * item.placements.count)
        }
        #expect(second.bytesPresent == presentBytes)
        for sha256 in order[half...] { try world.accept(second, sha256) }

        // Damage in the middle of a staged file: that chunk (and only that one) is needed again.
        let file = try #require(v1.files.firstIndex { $0.path == "Levels/a.bin" })
        let middle = v1.files[file].size / 2
        var offset: Int64 = 0
        let damaged = try #require(
            v1.files[file].chunks.first { chunk in
                defer { offset += Int64(chunk.length) }
                return offset + Int64(chunk.length) > middle
            })
        let handle = try #require(FileHandle(forUpdatingAtPath: world.packs + "/1.staging/Levels/a.bin"))
        try handle.seek(toOffset: UInt64(middle))
        try handle.write(contentsOf: Data([1, 2, 3, 4, 5]))
        try handle.close()
        // A file cut short is set back to its size; its lost chunks are needed again.
        #expect(truncate(world.packs + "/1.staging/intro.bin", 100) == 0)
        // As a finish() cut short by a crash leaves them: read-only files and folders.
        chmod(world.packs + "/1.staging/Levels/sub/b.bin", 0o555)
        chmod(world.packs + "/1.staging/Levels/sub", 0o555)
        #expect(FileManager.default.createFile(atPath: world.packs + "/1.staging/stray.bin", contents: Data([1])))
        let third = try PackStaging(root: world.root, plan: plan)
        let intro = try #require(v1.files.first { $0.path == "intro.bin" })
        #expect(try third.prepare() == Set([damaged.sha256] + intro.chunks.map(\.sha256)))
        #expect(!FileManager.default.fileExists(atPath: world.packs + "/1.staging/stray.bin"))
        #expect(
            (try FileManager.default.attributesOfItem(atPath: world.packs + "/1.staging/intro.bin")[.size] as? Int)
                == Int(intro.size))
        #expect {
            try third.finish()
        } throws: { "\($0)".contains("still needed") }
        for sha256 in third.needed { try world.accept(third, sha256) }
        try third.finish()
        #expect(try world.read(world.packs + "/1/Levels/a.bin") == world.read(world.source.path + "/Levels/a.bin"))
    }

    @Test func aWrongFrameIsRefusedAndWritesNothing() throws {
        let world = try World()
        defer { world.remove() }
        let v1 = try Self.version1(world)
        let plan = PackPlan(target: v1, installed: nil)
        let staging = try PackStaging(root: world.root, plan: plan)
        _ = try staging.prepare()
        let chunks = v1.files.first { $0.path == "Levels/a.bin" }!.chunks
        let victim = chunks[0].sha256
        for frame in [try world.frame(chunks[1].sha256), [1, 2, 3], Array(try world.frame(victim).dropLast(3))] {
            #expect {
                try world.accept(staging, victim, frame: frame)
            } throws: { "\($0)".contains(victim) }
        }
        #expect {
            try world.accept(staging, String(repeating: "0", count: 64), frame: [1])
        } throws: { "\($0)".contains("not in version 1") }
        #expect(staging.needed.contains(victim) && staging.bytesPresent == 0)
        let staged = try world.read(world.packs + "/1.staging/Levels/a.bin")
        #expect(staged.prefix(chunks[0].length).allSatisfy { $0 == 0 }, "nothing was written")
    }

    @Test func aChangedInstalledFileIsFetchedInstead() throws {
        let world = try World()
        defer { world.remove() }
        let v1 = try Self.version1(world)
        try world.install(v1, from: nil)
        try world.source.write(Self.random(5_000, 8), to: "intro.bin")
        let v2 = try world.build(2)
        // The app changes a byte of its (read-only) installed file.
        let installed = world.packs + "/1/Levels/a.bin"
        chmod(world.packs + "/1/Levels", 0o755)
        chmod(installed, 0o644)
        let handle = try #require(FileHandle(forUpdatingAtPath: installed))
        try handle.write(contentsOf: Data([0xFF, 0xFE]))
        try handle.close()
        let plan = PackPlan(target: v2, installed: v1)
        let staging = try PackStaging(root: world.root, plan: plan)
        let needed = try staging.prepare()
        let first = v2.files.first { $0.path == "Levels/a.bin" }!.chunks[0].sha256
        #expect(plan.item(first)?.source == .installed(path: "Levels/a.bin", offset: 0))
        #expect(try staging.copyFromInstalled(needed) == Set(plan.fetch.map(\.sha256) + [first]))
    }

    @Test func aLinkPlantedInStagingIsRefusedNotFollowed() throws {
        let world = try World()
        let outside = try Folder()
        defer {
            world.remove()
            outside.remove()
        }
        let v1 = try Self.version1(world)
        let victim = Self.random(1 << 20, 99)
        try outside.write(victim, to: "victim.bin")
        let plan = PackPlan(target: v1, installed: nil)
        let staging = try PackStaging(root: world.root, plan: plan)
        _ = try staging.prepare()
        let file = world.packs + "/1.staging/Levels/a.bin"
        try FileManager.default.removeItem(atPath: file)
        try FileManager.default.createSymbolicLink(atPath: file, withDestinationPath: outside.path + "/victim.bin")
        for sha256 in v1.files.first(where: { $0.path == "Levels/a.bin" })!.chunks.map(\.sha256) {
            try? world.accept(staging, sha256)
        }
        #expect {
            try PackStaging(root: world.root, plan: plan).prepare()
        } throws: { "\($0)".contains("symbolic link") }
        // A folder replaced by a link to a folder outside: refused as well.
        try FileManager.default.removeItem(atPath: file)
        try FileManager.default.removeItem(atPath: world.packs + "/1.staging/Levels")
        try FileManager.default.createSymbolicLink(
            atPath: world.packs + "/1.staging/Levels", withDestinationPath: outside.path)
        #expect {
            try PackStaging(root: world.root, plan: plan).prepare()
        } throws: { "\($0)".contains("symbolic link") }
        #expect(try world.read(outside.path + "/victim.bin") == victim)
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path) == ["victim.bin"])
    }

    @Test(arguments: ["../x", "/etc/x", "a/../../x"])
    func aHostileIndexPathIsRefusedBeforeTheDiskIsTouched(path: String) throws {
        let world = try World()
        defer { world.remove() }
        var v1 = try Self.version1(world)
        v1.files[0].path = path
        #expect {
            try PackStaging(root: world.root, plan: PackPlan(target: v1, installed: nil))
        } throws: { "\($0)".contains(path) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: world.root).isEmpty)
    }

    /// What the reader thread saw while the main thread switched versions.
    final class Reads: Sendable {
        let stop = Atomic<Bool>(false)
        let rounds = Atomic<Int>(0)
        let mixes = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
    }

    @Test func aReaderSeesOneWholeVersionWhileTheLinkSwitches() throws {
        let world = try World()
        defer { world.remove() }
        try world.source.write([1] + Self.random(10_000, 10), to: "Levels/a")
        try world.source.write([1] + Self.random(10_000, 11), to: "Levels/b")
        try world.source.write([0], to: "intro.bin")
        let v1 = try world.build(1)
        try world.install(v1, from: nil)
        try world.source.write([2] + Self.random(10_000, 12), to: "Levels/a")
        try world.source.write([2] + Self.random(10_000, 13), to: "Levels/b")
        try world.install(try world.build(2), from: v1)
        let reads = Reads()
        let link = world.root + "/AssetPacks/levels"
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { done.signal() }
            func first(_ folder: Int32, _ path: String) -> UInt8? {
                let fd = openat(folder, path, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { return nil }
                defer { close(fd) }
                var byte: UInt8 = 0
                return read(fd, &byte, 1) == 1 ? byte : nil
            }
            // At least one round, then until the switching ends (bounded by it).
            repeat {
                let folder = open(link, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                if folder < 0 {
                    reads.failures.add(1, ordering: .relaxed)
                } else {
                    let a = first(folder, "Levels/a")
                    let b = first(folder, "Levels/b")
                    close(folder)
                    if a == nil || b == nil { reads.failures.add(1, ordering: .relaxed) }
                    if a != b { reads.mixes.add(1, ordering: .relaxed) }
                }
                reads.rounds.add(1, ordering: .relaxed)
            } while !reads.stop.load(ordering: .acquiring)
        }
        for _ in 0..<300 {
            try PackInstallation.switchCurrent(root: world.root, id: "levels", version: 1)
            try PackInstallation.switchCurrent(root: world.root, id: "levels", version: 2)
        }
        reads.stop.store(true, ordering: .releasing)
        done.wait()
        #expect(reads.rounds.load(ordering: .relaxed) > 0)
        #expect(reads.mixes.load(ordering: .relaxed) == 0)
        #expect(reads.failures.load(ordering: .relaxed) == 0)
        #expect(try PackInstallation.current(root: world.root, id: "levels") == 2)
        let links = try FileManager.default.contentsOfDirectory(atPath: world.root + "/AssetPacks")
        #expect(links == ["levels"], "no temporary link is left")
    }

    @Test func whatIsAtTheLinkMustBeBasdsLink() throws {
        let world = try World()
        defer { world.remove() }
        #expect(try PackInstallation.current(root: world.root, id: "levels") == nil)
        try FileManager.default.createDirectory(
            atPath: world.root + "/AssetPacks/levels", withIntermediateDirectories: true)
        #expect {
            try PackInstallation.current(root: world.root, id: "levels")
        } throws: { "\($0)".contains("not a link") }
        #expect {
            try PackInstallation.switchCurrent(root: world.root, id: "levels", version: 1)
        } throws: { "\($0)".contains("not complete") }
        try FileManager.default.removeItem(atPath: world.root + "/AssetPacks/levels")
        try FileManager.default.createSymbolicLink(
            atPath: world.root + "/AssetPacks/levels", withDestinationPath: "/etc")
        #expect {
            try PackInstallation.current(root: world.root, id: "levels")
        } throws: { "\($0)".contains("points to /etc") }
        try PackInstallation.removeLink(root: world.root, id: "levels")
        #expect(try PackInstallation.current(root: world.root, id: "levels") == nil)
    }

    @Test func holdersFindAProcessWithAnOpenFileUntilItEnds() throws {
        let world = try World()
        defer { world.remove() }
        let v1 = try Self.version1(world)
        try world.install(v1, from: nil)
        let version = world.packs + "/1"
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sh")
        // The child opens the file through the link, says so, and waits.
        child.arguments = [
            "-c", #"exec 3< "$0"; echo ready; exec sleep 1000"#, world.root + "/AssetPacks/levels/intro.bin",
        ]
        let output = Pipe()
        child.standardOutput = output
        try ChildProcess.launching.withLock { try child.run() }
        defer {
            if child.isRunning {
                kill(child.processIdentifier, SIGKILL)
                child.waitUntilExit()
            }
        }
        let line = output.fileHandleForReading.readData(ofLength: 6)
        #expect(String(decoding: line, as: UTF8.self) == "ready\n")
        #expect(PackInstallation.holders(of: version).contains(child.processIdentifier))
        #expect(!PackInstallation.holders(of: version).contains(getpid()))
        #expect(!PackInstallation.holders(of: world.source.path).contains(child.processIdentifier))
        // SIGKILL: the test thread blocks SIGTERM, and a spawned child inherits that mask.
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        #expect(!PackInstallation.holders(of: version).contains(child.processIdentifier))
        // Read-only, with a link planted inside: removed, the link as a link.
        let outside = try Folder()
        defer { outside.remove() }
        try outside.write([7], to: "keep.bin")
        chmod(version + "/Levels", 0o755)
        symlink(outside.path, version + "/Levels/escape")
        chmod(version + "/Levels", 0o555)
        try PackInstallation.removeLink(root: world.root, id: "levels")
        try PackInstallation.remove(root: world.root, id: "levels", version: 1)
        #expect(try PackInstallation.versions(root: world.root, id: "levels").isEmpty)
        #expect(try world.read(outside.path + "/keep.bin") == [7])
    }
}
