import Testing

@testable import BADownloadEngine

/// Which header lines make the engine refuse an encoded body (`Accept-Encoding: identity` was sent).
@Suite struct ContentEncodingLineTests {
    @Test(
        arguments: [
            ("Content-Encoding: gzip\r\n", "gzip"), ("content-encoding:br", "br"),
            ("CONTENT-ENCODING:  GZip \r\n", "gzip"),
            ("Content-Encoding: gzip, identity\r\n", "gzip"), ("Content-Encoding: identity\r\n", nil),
            ("Content-Encoding: \r\n", nil), ("Content-Type: application/gzip\r\n", nil),
            ("Content-Encodings: gzip\r\n", nil), ("X-Content-Encoding: gzip\r\n", nil),
        ] as [(String, String?)])
    func encodingOfALine(line: String, expected: String?) {
        var copy = line
        let encoding = copy.withUTF8 { EngineLoop.contentEncoding(UnsafeRawBufferPointer($0)) }
        #expect(encoding == expected, "\(line.debugDescription)")
    }
}
