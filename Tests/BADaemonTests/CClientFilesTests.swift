import BATestSupport
import CBAClient
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// libba_client's offline reader on a layout of basd's form written by hand, with what another
/// process of the user could plant in it: only basd's link form counts, and below it no link,
/// `..`, FIFO or path over basd's bounds is followed or opened.
@Suite("the C client's offline reader")
struct CClientFilesTests {
    static let app = "com.example.game"

    /// CONTAINER/AppAssetPacks/APP/ID -> ../.background-assets/packs/ID/N, as basd lays it out.
    struct Layout {
        let folder: TemporaryDirectory
        var container: String { folder.path + "/group" }
        var links: String { container + "/AppAssetPacks/" + CClientFilesTests.app }
        func version(_ id: String, _ number: Int) -> String {
            container + "/AppAssetPacks/.background-assets/packs/\(id)/\(number)"
        }

        init() throws {
            folder = try TemporaryDirectory()
            let manager = FileManager.default
            try manager.createDirectory(atPath: links, withIntermediateDirectories: true)
            let levels = version("levels", 2)
            try manager.createDirectory(atPath: levels + "/maps/deep", withIntermediateDirectories: true)
            try Data("one".utf8).write(to: URL(fileURLWithPath: levels + "/maps/one.txt"))
            try Data([UInt8](repeating: 7, count: 5000)).write(to: URL(fileURLWithPath: levels + "/big.bin"))
            try manager.createSymbolicLink(
                atPath: links + "/levels", withDestinationPath: "../.background-assets/packs/levels/2")
            // Planted: links below the version, a FIFO, a link to a folder outside.
            try manager.createSymbolicLink(atPath: levels + "/link.txt", withDestinationPath: "maps/one.txt")
            try manager.createSymbolicLink(atPath: levels + "/outside", withDestinationPath: "/etc")
            #expect(mkfifo(levels + "/fifo", 0o600) == 0)
            // Links of another form: to an absolute folder, to another pack's version, and a version
            // folder that is itself a link.
            try manager.createSymbolicLink(atPath: links + "/absolute", withDestinationPath: "/etc")
            try manager.createSymbolicLink(
                atPath: links + "/other", withDestinationPath: "../.background-assets/packs/levels/2")
            let sneaky = container + "/AppAssetPacks/.background-assets/packs/sneaky"
            try manager.createDirectory(atPath: sneaky, withIntermediateDirectories: true)
            try manager.createSymbolicLink(atPath: sneaky + "/1", withDestinationPath: "/etc")
            try manager.createSymbolicLink(
                atPath: links + "/sneaky", withDestinationPath: "../.background-assets/packs/sneaky/1")
            try manager.createSymbolicLink(
                atPath: links + "/huge", withDestinationPath: "../.background-assets/packs/huge/99999999999999999")
        }
    }

    /// Reads `path` of `pack`: the bytes, or the error's code and errno.
    static func read(_ layout: Layout, _ pack: String, _ path: String, max: Int = 1 << 20) -> Result<[UInt8], Failure> {
        var error = clientError()
        var data: UnsafeMutableRawPointer?
        var size = 0
        guard ba_client_read_file(layout.container, app, pack, path, max, &data, &size, &error) == 0 else {
            return .failure(Failure(code: error.code, errno: error.sys_errno))
        }
        defer { free(data) }
        return .success(data.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } ?? [])
    }

    struct Failure: Error, Equatable {
        var code: Int32
        var errno: Int32
    }

    static func refused(_ errno: Int32) -> Result<[UInt8], Failure> { .failure(Failure(code: 2000, errno: errno)) }

    @Test(
        "a file of basd's form is read; planted links, FIFOs, `..` and paths over the bounds are refused with their errno"
    )
    func refusals() throws {
        let layout = try Layout()
        defer { layout.folder.remove() }
        #expect(Self.read(layout, "levels", "maps/one.txt") == .success(Array("one".utf8)))
        #expect(Self.read(layout, "levels", "maps//one.txt") == .success(Array("one".utf8)))
        #expect(ba_client_local_version(layout.container, Self.app, "levels") == 2)
        let cases: [(String, String, Int32)] = [
            ("levels", "link.txt", ELOOP),
            ("levels", "outside/passwd", ELOOP),
            ("levels", "fifo", ENODEV),
            ("levels", "maps", EISDIR),
            ("levels", "maps/two.txt", ENOENT),
            ("levels", "maps/one.txt/x", ELOOP),
            ("levels", "../levels/2/maps/one.txt", EINVAL),
            ("levels", "maps/../maps/one.txt", EINVAL),
            ("levels", "./maps/one.txt", EINVAL),
            ("levels", "/maps/one.txt", EINVAL),
            ("levels", "", EINVAL),
            ("levels", String(repeating: "a/", count: 64) + "b", EINVAL),
            ("levels", String(repeating: "x", count: 1025), EINVAL),
            ("absolute", "passwd", ENOENT),
            ("other", "maps/one.txt", ENOENT),
            ("sneaky", "passwd", ELOOP),
            ("huge", "x", ENOENT),
            ("missing", "x", ENOENT),
            ("..", "x", EINVAL),
            (".hidden", "x", EINVAL),
            ("a/b", "x", EINVAL),
        ]
        for (pack, path, errno) in cases {
            #expect(Self.read(layout, pack, path) == Self.refused(errno), "\(pack) \(path.prefix(40))")
        }
        for pack in ["absolute", "other", "sneaky", "huge", "missing"] {
            #expect(ba_client_local_version(layout.container, Self.app, pack) == -1, "\(pack)")
        }
        // The caller's bound: a larger file is refused, not cut.
        #expect(Self.read(layout, "levels", "big.bin", max: 4999) == Self.refused(EFBIG))
        #expect(Self.read(layout, "levels", "big.bin", max: 5000) == .success([UInt8](repeating: 7, count: 5000)))
    }

    @Test("the group container is in basd's state folder, or XDG_DATA_HOME's")
    func groupContainer() {
        var error = clientError()
        var buffer = [CChar](repeating: 0, count: 256)
        #expect(ba_client_group_container("group.a", "/state", &buffer, buffer.count, &error) == 0)
        #expect(text(of: buffer) == "/state/groups/group.a")
        #expect(ba_client_group_container("../x", "/state", &buffer, buffer.count, &error) == -1 && error.code == 2001)
        var small = [CChar](repeating: 0, count: 8)
        #expect(ba_client_group_container("group.a", "/state", &small, small.count, &error) == -1)
        #expect(error.sys_errno == ENAMETOOLONG)
        #expect(ba_client_version() == UInt32(BA_CLIENT_VERSION_MAJOR << 16 | BA_CLIENT_VERSION_MINOR))
    }
}
