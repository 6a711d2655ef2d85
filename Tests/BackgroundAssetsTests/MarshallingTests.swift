import BACore
import BAExtensionABI
import CBAExtension
import Testing

/// C structs to wire records and back, as the runner and the Swift export do.
@Suite struct MarshallingTests {
    func decode(_ writer: ByteWriter) throws -> DownloadDescription {
        var reader = ByteReader(writer.bytes)
        return try DownloadDescription.decode(from: &reader)
    }

    @Test func aCDownloadRoundTrips() throws {
        let arena = CArena()
        let record = DownloadDescription(
            identifier: "level-1", url: "https://cdn.example.com/l1",
            headers: [.init(name: "Authorization", value: "Bearer x")], applicationGroupIdentifier: "group.g",
            priority: 100, isEssential: true, fileSize: 42, sha256: String(repeating: "b", count: 64))
        var writer = ByteWriter()
        #expect(writer.download(from: arena.download(record)) == nil)
        let decoded = try decode(writer)
        #expect(decoded == record)
        guard case .success(let read) = readDownload(arena.download(record)) else {
            Issue.record("readDownload failed")
            return
        }
        #expect(read == record)
    }

    @Test(
        "BA_DOWNLOAD_FLAG_NO_METERED_NETWORK is allowsExpensiveNetworkAccess false, both ways; unknown bits are ignored"
    )
    func theMeteredFlag() throws {
        let arena = CArena()
        for allows in [false, true] {
            let record = DownloadDescription(
                identifier: "a", url: "https://127.0.0.1/a", isEssential: !allows, allowsExpensiveNetworkAccess: allows)
            let download = arena.download(record)
            #expect((download.pointee.flags & UInt32(BA_DOWNLOAD_FLAG_NO_METERED_NETWORK) != 0) == !allows)
            download.pointee.flags |= 0x8000_0000  // a flag of a newer header
            var writer = ByteWriter()
            #expect(writer.download(from: download) == nil)
            #expect(try decode(writer).allowsExpensiveNetworkAccess == allows)
            #expect(try decode(writer).isEssential == !allows)
            guard case .success(let read) = readDownload(download) else {
                Issue.record("readDownload failed")
                return
            }
            #expect(read.allowsExpensiveNetworkAccess == allows)
        }
    }

    @Test func aNullStringWithALengthIsMalformedNotRead() throws {
        var download = ba_download()
        download.struct_size = UInt32(MemoryLayout<ba_download>.size)
        download.identifier = nil
        download.identifier_length = 5
        var writer = ByteWriter()
        #expect(withUnsafePointer(to: &download) { writer.download(from: $0) } == nil)
        let decoded = try decode(writer)
        #expect(!decoded.isWellFormed)
        #expect(DownloadRules.check(decoded) != nil)
    }

    @Test func aTooSmallStructIsRefused() {
        var download = ba_download()
        download.struct_size = 16
        var writer = ByteWriter()
        let violation = withUnsafePointer(to: &download) { writer.download(from: $0) }
        #expect(violation?.reason.contains("struct_size 16") == true)
        #expect(writer.bytes.isEmpty)
    }
}
