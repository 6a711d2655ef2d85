import NIOHTTP1

/// How to answer one request for an asset: status, headers, which bytes to send and how. Made without I/O from
/// the request, the representation and the behaviour, so every combination is unit-testable; the channel
/// handler only carries it out.
struct ResponsePlan: Equatable {
    /// How the body bytes go out.
    enum Delivery: Equatable {
        /// All of them, then the end of the response.
        case all
        /// The first `n` (at most all), then close the connection without ending the response.
        case dropAfter(Int)
        /// The first `n` (at most all), then nothing more while the connection stays open.
        case stall(Int)
        /// All of them, paced at about this many bytes per second.
        case trickle(bytesPerSecond: Int)
    }

    var status: HTTPResponseStatus
    var headers: HTTPHeaders
    /// The bytes of the representation to send (empty for none).
    var body: Range<Int>
    var delivery: Delivery
    /// Close the connection once the response is written, because its framing is deliberately wrong.
    var closeAfter: Bool

    /// The plan for a GET or HEAD of a representation of `size` bytes with `validators`, given the request's
    /// `Range` and `If-Range` values and the behaviour in force (`nil` for none; behaviours that answer without
    /// the asset, such as `status`, are handled before this).
    static func asset(
        isHead: Bool, range: String?, ifRange: String?, size: Int, validators: Validators, behavior: Behavior?,
        generation: Int = 0, contentType: String = "application/octet-stream"
    ) -> ResponsePlan {
        var selection: ByteRangeSelection =
            behavior == .ignoreRange
            ? .whole : .select(range: range, ifRange: ifRange, size: size, validators: validators)
        var lies: ValidatorHeaders?
        switch behavior {
        case .ignoreIfRange:
            selection = .select(range: range, ifRange: nil, size: size, validators: validators)
        case .switchVersionAfterDrop(_, let before, let after, _):
            selection = .select(range: range, ifRange: nil, size: size, validators: validators)
            lies = generation <= 1 ? before : after
        case .wrongRange(let shift):
            if case .partial(let asked) = selection, size > 0 {
                let start = min(max(0, asked.lowerBound + shift), size - 1)
                selection = .partial(start..<size)
            }
        default:
            break
        }

        var headers = HTTPHeaders()
        headers.add(name: "Accept-Ranges", value: "bytes")
        let status: HTTPResponseStatus
        let bytes: Range<Int>
        switch selection {
        case .whole:
            status = .ok
            bytes = 0..<size
        case .partial(let range):
            status = .partialContent
            bytes = range
            headers.add(name: "Content-Range", value: "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)")
        case .unsatisfiable:
            headers.add(name: "Content-Range", value: "bytes */\(size)")
            headers.add(name: "Content-Length", value: "0")
            return ResponsePlan(
                status: .rangeNotSatisfiable, headers: headers, body: 0..<0, delivery: .all, closeAfter: false)
        }
        headers.add(name: "Content-Type", value: contentType)
        if let lies {
            if let etag = lies.etag { headers.add(name: "ETag", value: etag) }
            if let lastModified = lies.lastModified { headers.add(name: "Last-Modified", value: lastModified) }
        } else {
            if behavior != .ignoreIfRange(lastModifiedOnly: true) { headers.add(name: "ETag", value: validators.etag) }
            headers.add(name: "Last-Modified", value: validators.lastModifiedHeader)
        }

        var plan = ResponsePlan(
            status: status, headers: headers, body: isHead ? 0..<0 : bytes, delivery: .all, closeAfter: false)
        var contentLength: Int? = bytes.count
        switch behavior {
        case .lieAboutLength(let declared):
            contentLength = max(0, declared)
            plan.closeAfter = !isHead
        case .dropAfter(let n) where !isHead:
            plan.delivery = .dropAfter(min(max(0, n), bytes.count))
        case .switchVersionAfterDrop(let n, _, _, _) where !isHead && generation <= 1:
            plan.delivery = .dropAfter(min(max(0, n), bytes.count))
        case .stall(let n) where !isHead:
            plan.delivery = .stall(min(max(0, n), bytes.count))
        case .trickle(let rate) where !isHead && !bytes.isEmpty:
            plan.delivery = .trickle(bytesPerSecond: max(1, rate))
        case .chunked:
            // NIO's encoder frames a body without a length as chunked (HTTP/1.1).
            contentLength = nil
        default:
            break
        }
        if let contentLength { plan.headers.add(name: "Content-Length", value: String(contentLength)) }
        return plan
    }
}

extension Validators {
    /// The validators a `changeETagEachRequest` response carries for its `generation` (1, 2, …): a distinct
    /// strong tag and a `Last-Modified` that many seconds later, so both look like a newer file.
    func changed(generation: Int) -> Validators {
        guard generation > 0 else { return self }
        let bare =
            etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count >= 2 ? etag.dropFirst().dropLast() : etag[...]
        return Validators(etag: "\"\(bare)-g\(generation)\"", lastModified: lastModified + Int64(generation))
    }
}

/// The media type of a served path, by its extension: what a CDN configured for a publish folder
/// sends (`manifest.json` and indexes as JSON, signatures as text, chunks and bundles as bytes).
enum ContentType {
    static func of(_ path: String) -> String {
        let name = path.split(separator: "/").last ?? ""
        guard let dot = name.lastIndex(of: ".") else { return "application/octet-stream" }
        switch name[name.index(after: dot)...].lowercased() {
        case "json": return "application/json"
        case "sig", "txt", "pub": return "text/plain; charset=utf-8"
        case "zst": return "application/zstd"
        case "html": return "text/html; charset=utf-8"
        default: return "application/octet-stream"
        }
    }
}
