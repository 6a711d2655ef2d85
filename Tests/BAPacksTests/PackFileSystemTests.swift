import Foundation
import SystemPackage
import Testing

@testable import BAPacks

/// BAPacks' one layer on the kernel (`PackFileSystem`): what it refuses, and that a failed call
/// says which call and carries its `Errno` rather than only text.
@Suite("pack file system")
struct PackFileSystemTests {
    typealias Folder = PackBuildTests.Folder

    @Test("a failed call carries its Errno and names the call")
    func typedErrors() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let missing = folder.path + "/absent"
        let error = try #require(throws: PackError.self) { try PackFileSystem.openRoot(missing) }
        #expect(error.code == .fileSystem && error.errno == .noSuchFileOrDirectory && error.operation == "open")
        #expect(error.description == "cannot open the folder \(missing): \(Errno.noSuchFileOrDirectory)")

        let root = try PackFileSystem.openRoot(folder.path)
        try PackFileSystem.remove("absent", in: root, display: missing)
        let unlink = try #require(throws: PackError.self) {
            try PackFileSystem.remove("absent", in: root, absentIsFine: false, display: missing)
        }
        #expect(unlink.errno == .noSuchFileOrDirectory && unlink.operation == "unlinkat")
        let rename = try #require(throws: PackError.self) {
            try PackFileSystem.rename("absent", to: "other", in: root, failure: "cannot rename")
        }
        #expect(rename.errno == .noSuchFileOrDirectory && rename.operation == "renameat")
        try PackFileSystem.rename("absent", to: "other", in: root, absentIsFine: true, failure: "cannot rename")
    }

    @Test("opens below a folder never follow a link, and take only regular files")
    func refusals() throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write([1, 2, 3], to: "target.bin")
        let root = try PackFileSystem.openRoot(folder.path)
        try PackFileSystem.symbolicLink("link.bin", in: root, to: "target.bin", display: "link.bin")
        #expect(try PackFileSystem.linkTarget("link.bin", in: root, display: "link.bin") == "target.bin")
        #expect(try PackFileSystem.status("link.bin", in: root, display: "link.bin")?.type == .symbolicLink)
        #expect(PackFileSystem.linkTarget(atPath: folder.path + "/link.bin") == "target.bin")

        let link = try #require(throws: PackError.self) {
            try PackFileSystem.openFile("link.bin", in: root, .readOnly, display: "link.bin")
        }
        #expect(link.description == "link.bin is a symbolic link; refused (remove it)")
        let linkedFolder = try #require(throws: PackError.self) {
            try PackFileSystem.openFolder("link.bin", in: root, display: "link.bin")
        }
        #expect(linkedFolder.description.hasSuffix("is a symbolic link or not a folder; refused (remove it)"))
        // A FIFO there neither hangs the open nor passes for a file.
        #expect(mkfifo(folder.path + "/fifo", 0o644) == 0)
        let fifo = try #require(throws: PackError.self) {
            try PackFileSystem.openFile("fifo", in: root, .readOnly, display: "fifo")
        }
        #expect(fifo.description == "fifo is not a regular file; refused (remove it)")
        let absent = try PackFileSystem.openFile("absent", in: root, .readOnly, display: "absent", missingIsNil: true)
        #expect(absent == nil)
        #expect(try PackFileSystem.status("absent", in: root, display: "absent") == nil)
    }

    @Test("reads and writes at an offset, sizes and modes a file")
    func readWrite() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let root = try PackFileSystem.openRoot(folder.path)
        let made = try PackFileSystem.openFolder("sub", in: root, create: true, display: "sub")
        let file = try #require(
            try PackFileSystem.openFile("a.bin", in: made, .readWrite, options: .create, display: "a.bin"))
        try PackFileSystem.resize(file, to: 64, display: "a.bin")
        try [UInt8](repeating: 7, count: 16).withBytes { bytes throws(PackError) in
            try PackFileSystem.writeFully(file, bytes, at: 8, display: "a.bin")
        }
        #expect(!PackFileSystem.isHole(file, offset: 8, length: 16))
        var buffer = [UInt8](repeating: 0, count: 16)
        let read = try buffer.withMutableBytes { bytes throws(PackError) in
            try PackFileSystem.readFully(file, into: bytes, at: 8, display: "a.bin")
        }
        #expect(read && buffer == [UInt8](repeating: 7, count: 16))
        // Past the end: the file ends first.
        let pastEnd = try buffer.withMutableBytes { bytes throws(PackError) in
            try PackFileSystem.readFully(file, into: bytes, at: 60, display: "a.bin")
        }
        #expect(!pastEnd)
        try PackFileSystem.setMode(file, 0o444, failure: "cannot make a.bin read-only")
        try PackFileSystem.sync(file, display: "a.bin")
        let info = try PackFileSystem.status(of: file, display: "a.bin")
        #expect(info.size == 64 && info.mode.rawValue & 0o7777 == 0o444 && info.type == .regular)
        #expect(try PackFileSystem.names(in: made, display: "sub") == ["a.bin"])
        try PackFileSystem.removeTree("sub", in: root, display: "sub")
        #expect(try PackFileSystem.status("sub", in: root, display: "sub") == nil)
    }
}
