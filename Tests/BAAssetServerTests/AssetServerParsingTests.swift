import BAHTTP
import Testing

@testable import BAAssetServer

/// The I/O-free pieces: dates, ranges, paths and response plans.
@Suite struct AssetServerParsingTests {
    @Test(arguments: [
        (Int64(0), "Thu, 01 Jan 1970 00:00:00 GMT"),
        (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
        (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
        (4_102_444_799, "Thu, 31 Dec 2099 23:59:59 GMT"),
    ])
    func httpDatesFormatAndParse(seconds: Int64, text: String) {
        #expect(HTTPDate.format(seconds) == text)
        #expect(HTTPDate.parse(text) == seconds)
    }

    @Test(arguments: [
        "", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
    ])
    func otherDateFormsDoNotParse(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test func rangeSpecs() {
        #expect(ByteRangeSpec(parsing: "bytes=1-2") == .closed(first: 1, last: 2))
        #expect(ByteRangeSpec(parsing: " bytes = 7- ") == .from(first: 7))
        #expect(ByteRangeSpec(parsing: "BYTES=-9") == .suffix(length: 9))
        for invalid in [
            "bytes=2-1", "bytes=1-2,4-5", "bytes=-", "bytes=a-b", "bytes=+1-2", "bytes 1-2", "=1-2",
            "bytes=99999999999999999999999-",
        ] {
            #expect(ByteRangeSpec(parsing: invalid) == nil, "\(invalid)")
        }
        #expect(ByteRangeSpec.suffix(length: 5).resolve(size: 0) == .unsatisfiable)
        #expect(ByteRangeSpec.from(first: 0).resolve(size: 0) == .unsatisfiable)
        #expect(ByteRangeSpec.closed(first: 0, last: 0).resolve(size: 1) == .partial(0..<1))
    }

    @Test func paths() {
        #expect(RequestPath.decode("/a%20b.bin?x=1#f") == "/a b.bin")
        #expect(RequestPath.decode("http://127.0.0.1:80/x/y") == "/x/y")
        #expect(RequestPath.decode("/") == "/")
        #expect(RequestPath.decode("/a/..b/c..") == "/a/..b/c..", "dots inside a name are fine")
        for refused in ["/..", "/a/../b", "/%2e%2e/b", "/a%2F..%2Fb", "/a%00", "/%", "/%g0", "*", "", "/%ff"] {
            #expect(RequestPath.decode(refused) == nil, "\(refused)")
        }
        #expect(RequestPath.key("a.bin") == "/a.bin")
    }

    @Test func planForHeadOmitsTheBodyButKeepsTheLength() {
        let validators = Validators(etag: "\"t\"", lastModified: 0)
        let plan = ResponsePlan.asset(
            isHead: true, range: "bytes=0-9", ifRange: nil, size: 100, validators: validators,
            behavior: .dropAfter(bytes: 3))
        #expect(plan.status == .partialContent)
        #expect(plan.body.isEmpty)
        #expect(plan.delivery == .all)
        #expect(plan.headers.first(name: "content-length") == "10")
    }

    @Test func planShapesTheSelectedBytes() {
        let validators = Validators(etag: "\"t\"", lastModified: 0)
        let dropped = ResponsePlan.asset(
            isHead: false, range: "bytes=50-", ifRange: nil, size: 100, validators: validators,
            behavior: .dropAfter(bytes: 500))
        #expect(dropped.body == 50..<100)
        #expect(dropped.delivery == .dropAfter(50), "never more than the range")
        let lie = ResponsePlan.asset(
            isHead: false, range: nil, ifRange: nil, size: 100, validators: validators,
            behavior: .lieAboutLength(declared: -5))
        #expect(lie.headers.first(name: "content-length") == "0")
        #expect(lie.closeAfter)
        #expect(validators.changed(generation: 2) == Validators(etag: "\"t-g2\"", lastModified: 2))
    }

    @Test func basicAuthorization() {
        #expect(AssetRequestHandler.isAuthorized("Basic YTpi", user: "a", password: "b"))
        #expect(!AssetRequestHandler.isAuthorized("Bearer YTpi", user: "a", password: "b"))
        #expect(!AssetRequestHandler.isAuthorized("Basic", user: "a", password: "b"))
        #expect(!AssetRequestHandler.isAuthorized(nil, user: "a", password: "b"))
    }
}
