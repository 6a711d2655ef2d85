import BAHashing
import Foundation
import SystemPackage
import Testing

/// SHA-256 of bytes, streamed, and of a file, which is never read through a link.
@Suite("SHA-256")
struct SHA256HasherTests {
    static let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

    @Test("the FIPS 180-2 vector, whole and streamed")
    func vector() {
        #expect(SHA256Hasher.hex(of: Array("abc".utf8)) == Self.abc)
        let hasher = SHA256Hasher()
        for byte in "abc".utf8 { [byte].withUnsafeBytes { hasher.update($0) } }
        #expect(hasher.finalizeHex() == Self.abc)
    }

    @Test("a file's SHA-256, and a link refused")
    func file() throws {
        let folder = NSTemporaryDirectory() + "ba-hashing-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Larger than one 1 MiB read, so the loop takes more than one.
        let bytes = (0..<(3 << 19)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try Data(bytes).write(to: URL(fileURLWithPath: folder + "/a.bin"))
        #expect(try SHA256Hasher.hex(ofFileAt: folder + "/a.bin") == SHA256Hasher.hex(of: bytes))
        #expect(symlink("a.bin", folder + "/link.bin") == 0)
        #expect(throws: Errno.tooManySymbolicLinkLevels) { try SHA256Hasher.hex(ofFileAt: folder + "/link.bin") }
        #expect(throws: Errno.noSuchFileOrDirectory) { try SHA256Hasher.hex(ofFileAt: folder + "/absent") }
    }
}
