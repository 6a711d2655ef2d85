import Testing

@testable import BAPacks

/// The assembly plan, I/O-free: what is fetched, what is reused, where every chunk goes; and the
/// checks an index passes before a device touches its disk for it.
@Suite("pack plan")
struct PackPlanTests {
    /// A chunk named by one hex letter repeated: length 10 and stored length 4 each.
    static func chunk(_ name: Character) -> PackIndex.Chunk {
        PackIndex.Chunk(sha256: String(repeating: name, count: 64), length: 10, storedLength: 4)
    }

    static func index(version: Int = 1, _ files: [(String, String)]) throws -> PackIndex {
        PackIndex(
            formatVersion: 1, id: "levels", version: version, userInfo: nil, downloadPolicy: .onDemand,
            chunking: try .init(average: 4096),
            files: files.map { path, chunks in
                PackIndex.File(
                    path: path, size: Int64(10 * chunks.count), mode: 0o644, sha256: String(repeating: "0", count: 64),
                    chunks: chunks.map(chunk))
            })
    }

    static func sha(_ name: Character) -> String { String(repeating: name, count: 64) }

    @Test func theSameVersionReusesEverything() throws {
        let v1 = try Self.index([("a", "abc"), ("b", "d")])
        let plan = PackPlan(target: v1, installed: v1)
        #expect(plan.fetch.isEmpty && plan.fetchStoredBytes == 0 && plan.fetchBytes == 0)
        #expect(plan.reused.map(\.sha256) == ["a", "b", "c", "d"].map { Self.sha(Character($0)) })
        #expect(plan.reusedBytes == 40 && plan.totalBytes == 40)
        #expect(plan.item(Self.sha("c"))?.source == .installed(path: "a", offset: 20))
        #expect(plan.item(Self.sha("d"))?.source == .installed(path: "b", offset: 0))
        #expect(plan.installedVersion == 1)
    }

    @Test func aChunkAnotherLocalPackHasIsCopiedFromItAndTheInstalledVersionComesFirst() throws {
        var other = try Self.index([("shared", "xa")])
        other.id = "extras"
        other.version = 3
        let installed = try Self.index([("old", "a")])
        let target = try Self.index(version: 2, [("new", "axz")])
        let plan = PackPlan(target: target, installed: installed, others: [other])
        #expect(plan.item(Self.sha("a"))?.source == .installed(path: "old", offset: 0))
        #expect(plan.item(Self.sha("x"))?.source == .otherPack(pack: "extras", version: 3, path: "shared", offset: 0))
        #expect(plan.fetch.map(\.sha256) == [Self.sha("z")])
        #expect(plan.reusedBytes == 20)
        // A pack is never its own other.
        var same = other
        same.id = "levels"
        #expect(PackPlan(target: target, installed: nil, others: [same]).fetch.count == 3)
    }

    @Test func aFreshInstallFetchesEverything() throws {
        let plan = PackPlan(target: try Self.index([("a", "ab"), ("dir/b", "c")]), installed: nil)
        #expect(plan.fetch.map(\.sha256) == [Self.sha("a"), Self.sha("b"), Self.sha("c")])
        #expect(plan.reused.isEmpty && plan.reusedBytes == 0)
        #expect(plan.fetchStoredBytes == 12 && plan.fetchBytes == 30 && plan.totalBytes == 30)
        #expect(plan.installedVersion == nil)
    }

    @Test func aRepeatedChunkIsFetchedOnceAndPlacedEverywhere() throws {
        let plan = PackPlan(target: try Self.index([("x", "aba"), ("y", "a")]), installed: nil)
        #expect(plan.fetch.map(\.sha256) == [Self.sha("a"), Self.sha("b")])
        #expect(plan.fetchStoredBytes == 8)
        #expect(
            plan.item(Self.sha("a"))?.placements == [
                .init(file: 0, offset: 0), .init(file: 0, offset: 20), .init(file: 1, offset: 0),
            ])
        #expect(plan.item(Self.sha("b"))?.placements == [.init(file: 0, offset: 10)])
        #expect(plan.totalBytes == 40)
    }

    @Test func aMovedChunkComesFromWhereItWas() throws {
        let installed = try Self.index(version: 1, [("p", "ab"), ("q", "eb")])
        let target = try Self.index(version: 2, [("q", "cb"), ("r", "a")])
        let plan = PackPlan(target: target, installed: installed)
        #expect(plan.item(Self.sha("b"))?.source == .installed(path: "p", offset: 10), "the first place it occurs")
        #expect(plan.item(Self.sha("a"))?.source == .installed(path: "p", offset: 0))
        #expect(plan.item(Self.sha("a"))?.placements == [.init(file: 1, offset: 0)])
        #expect(plan.item(Self.sha("c"))?.source == .fetch)
        #expect(plan.fetch.map(\.sha256) == [Self.sha("c")])
        #expect(plan.reusedBytes == 20 && plan.fetchBytes == 10)
    }

    @Test func aChunkOfAnotherLengthIsNotReused() throws {
        var installed = try Self.index([("p", "a")])
        installed.files[0].chunks[0].length = 11
        let plan = PackPlan(target: try Self.index(version: 2, [("p", "a")]), installed: installed)
        #expect(plan.item(Self.sha("a"))?.source == .fetch)
    }

    @Test func emptyFilesNeedNoChunks() throws {
        let plan = PackPlan(target: try Self.index([("empty", ""), ("also/empty", "")]), installed: nil)
        #expect(plan.items.isEmpty && plan.fetch.isEmpty && plan.totalBytes == 0)
        try plan.target.checkInstallable()
    }

    @Test(arguments: [
        ("../x", "../x"), ("/etc/x", "/etc/x"), ("a/../../x", "a/../../x"), ("a//b", "a//b"), ("./a", "./a"),
        ("a/", "a/"), ("", "\"\""), ("a\0b", "a\0b"), (String(repeating: "n", count: 256), "nnnn"),
    ])
    func hostilePathsAreRefused(path: String, says: String) throws {
        let index = try Self.index([(path, "a")])
        #expect {
            try index.checkInstallable()
        } throws: { "\($0)".contains(says) }
    }

    @Test func clashesAndLiesInTheIndexAreRefused() throws {
        #expect {
            try Self.index([("a", "a"), ("a/b", "b")]).checkInstallable()
        } throws: { "\($0)".contains("\"a\" as a file and as a folder") }
        #expect {
            try Self.index([("a", "a"), ("a", "b")]).checkInstallable()
        } throws: { "\($0)".contains("twice") }
        var sized = try Self.index([("a", "ab")])
        sized.files[0].size = 5
        #expect { try sized.checkInstallable() } throws: { "\($0)".contains("size 5") }
        var setuid = try Self.index([("a", "a")])
        setuid.files[0].mode = 0o4755
        #expect { try setuid.checkInstallable() } throws: { "\($0)".contains("mode 4755") }
        var id = try Self.index([("a", "a")])
        id.id = "../x"
        #expect { try id.checkInstallable() } throws: { "\($0)".contains("../x") }
        var twoLengths = try Self.index([("a", "a"), ("b", "a")])
        twoLengths.files[1].chunks[0].length = 11
        twoLengths.files[1].size = 11
        #expect { try twoLengths.checkInstallable() } throws: { "\($0)".contains("two lengths") }
        try Self.index([("a/b", "a"), ("a/c/d", "b"), (".hidden", "c")]).checkInstallable()
    }
}
