import BACore
import Foundation
import Testing

@testable import BackgroundAssets

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Apple's `URLRequest.allowsExpensiveNetworkAccess` and `allowsConstrainedNetworkAccess` on
/// Linux: settable as on Apple's platforms, kept by every copy, carried by a `BAURLDownload` to
/// basd (and back), never sent as a header.
@Suite("Network access of a request")
struct NetworkAccessTests {
    static let url = URL(string: "https://127.0.0.1/a.bin")!

    @Test("default true; false survives copies and reaches the download's record, without its header")
    func reachesTheRecord() throws {
        var request = URLRequest(url: Self.url)
        #expect(request.allowsExpensiveNetworkAccess && request.allowsConstrainedNetworkAccess)
        request.setValue("x", forHTTPHeaderField: "X-Token")
        request.allowsExpensiveNetworkAccess = false
        var copy = request
        copy.timeoutInterval = 5
        #expect(!copy.allowsExpensiveNetworkAccess && copy.allowsConstrainedNetworkAccess)

        let download = BAURLDownload(
            identifier: "a", request: copy, fileSize: 10, applicationGroupIdentifier: "group.example")
        let record = download.record
        #expect(!record.allowsExpensiveNetworkAccess)
        #expect(record.headers == [.init(name: "X-Token", value: "x")])
        // Back from basd (a listing), the request says so again.
        let back = try #require(BAURLDownload(record: record))
        #expect(!back.request.allowsExpensiveNetworkAccess)
        #expect(back.record.headers == record.headers)
    }

    @Test(
        "any of the three false: the download waits on a metered network",
        arguments: [
            (true, true, true, true), (false, true, true, false), (true, false, true, false),
            (true, true, false, false), (false, false, true, false),
        ])
    func eachProperty(expensive: Bool, constrained: Bool, cellular: Bool, allowsMetered: Bool) {
        var request = URLRequest(url: Self.url)
        request.allowsExpensiveNetworkAccess = expensive
        request.allowsConstrainedNetworkAccess = constrained
        request.allowsCellularAccess = cellular
        #expect(request.allowsExpensiveNetworkAccess == expensive)
        #expect(request.allowsConstrainedNetworkAccess == constrained)
        let download = BAURLDownload(
            identifier: "a", request: request, fileSize: 10, applicationGroupIdentifier: "group.example")
        #expect(download.record.allowsExpensiveNetworkAccess == allowsMetered)
        // Set back to true, nothing is left of it.
        request.allowsExpensiveNetworkAccess = true
        request.allowsConstrainedNetworkAccess = true
        #expect(request.allHTTPHeaderFields?.keys.contains { $0.lowercased().hasPrefix("x-background-assets") } != true)
    }

    @Test("the record's JSON leaves the key out when true, and the binary layout carries it")
    func wire() throws {
        var record = DownloadDescription(identifier: "a", url: Self.url.absoluteString)
        #expect(!String(decoding: try JSONEncoder().encode(record), as: UTF8.self).contains("allowsExpensive"))
        record.allowsExpensiveNetworkAccess = false
        let decoded = try JSONDecoder().decode(DownloadDescription.self, from: JSONEncoder().encode(record))
        #expect(!decoded.allowsExpensiveNetworkAccess)
        var writer = ByteWriter()
        record.encode(into: &writer)
        var reader = ByteReader(writer.bytes)
        #expect(try !DownloadDescription.decode(from: &reader).allowsExpensiveNetworkAccess)
    }
}
