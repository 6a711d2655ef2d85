/// A deliberate misbehaviour of ``AssetServer`` for one path, set with ``AssetServer/setBehavior(_:for:)``.
///
/// Behaviours model the failures a download engine meets in the field. Each applies to every request for
/// its path (GET and HEAD) until it is replaced or cleared, except ``status(_:retryAfter:times:)``, which
/// counts down. Behaviours that shape the body (`dropAfter`, `stall`, `trickle`) apply to whatever body the
/// request selects, so a ranged request is cut relative to the start of its range. A HEAD request never gets
/// a body, so for it those behaviours only leave the headers as they would be.
package enum Behavior: Sendable, Equatable {
    /// Sends the headers (with the true `Content-Length`) and the first `bytes` bytes of the body, then closes
    /// the connection: a network failure in the middle of a transfer.
    case dropAfter(bytes: Int)

    /// Declares `Content-Length: declared` but sends the real body, then closes the connection (the framing
    /// is broken either way). Longer than the truth looks like a truncated transfer; shorter leaves junk.
    case lieAboutLength(declared: Int)

    /// Answers ranged requests with 200 and the whole file, as servers without range support do. The response
    /// still says `Accept-Ranges: bytes`, so a client must check for 206 rather than trust that header.
    case ignoreRange

    /// Answers a ranged request with 206 and another range than the one asked for: from `shift`
    /// bytes after the asked start (before it when negative; at least 0, at most the last byte) to
    /// the end, with a `Content-Range` that says so, as a cache that mangles ranges does.
    case wrongRange(shift: Int)

    /// Gives every response a new strong `ETag` and a later `Last-Modified`, as if the file were replaced
    /// between any two requests (the bytes stay the same). An `If-Range` therefore never matches.
    case changeETagEachRequest

    /// Like ``changeETagEachRequest`` (a new version at every request), but honours `Range` while
    /// ignoring `If-Range`: a ranged request gets 206 with bytes of the *new* version, which a client
    /// must not append to the old ones. With `lastModifiedOnly`, responses carry no `ETag`, so
    /// `Last-Modified` is the only validator.
    case ignoreIfRange(lastModifiedOnly: Bool)

    /// A lying server's version switch, for the resume rule: the first request is answered with
    /// `before`'s validators and cut after `dropAfter` body bytes; every later request is answered
    /// from `newContents` with `after`'s validators, honouring `Range` and ignoring `If-Range` — a
    /// 206 of the new version that a client must not append to the old bytes unless it repeats
    /// every validator they were fetched with. Memory files only.
    case switchVersionAfterDrop(
        dropAfter: Int, before: ValidatorHeaders, after: ValidatorHeaders, newContents: [UInt8])

    /// Answers `code` (for example 500, 503 or 429) with a short text body for the next `times` requests,
    /// adding `Retry-After: retryAfter` when given, then serves normally again.
    case status(Int, retryAfter: String? = nil, times: Int = Int.max)

    /// Answers 401 with `WWW-Authenticate: Basic realm="assets"` unless the request carries
    /// `Authorization: Basic` with exactly these credentials.
    case requireBasicAuth(user: String, password: String)

    /// Sends the headers and `afterBytes` bytes of the body, then nothing more, keeping the connection open
    /// until the client closes it or the server shuts down: a hung peer, for testing timeouts.
    case stall(afterBytes: Int)

    /// Sends the body at about `bytesPerSecond` (at least one byte at a time, in chunks every 10 ms or more),
    /// paced by the event loop's timers.
    case trickle(bytesPerSecond: Int)

    /// Answers `status` (301, 302, 303, 307 or 308) with `Location: to` (an absolute URL or a path).
    case redirect(to: String, status: Int = 302)

    /// Sends the body without `Content-Length`, in HTTP/1.1's chunked transfer coding, as a server
    /// streaming generated content does: the client learns the body's size only at its end (a ranged
    /// answer still says `Content-Range`). For a download limited to fewer bytes, a body that grows
    /// past the limit while it is written.
    case chunked
}

/// The validator headers a lying response carries, each left out when nil.
package struct ValidatorHeaders: Sendable, Equatable {
    /// The `ETag` value as sent (quoted, or `W/"…"` for a weak one).
    package var etag: String?
    /// The `Last-Modified` value as sent.
    package var lastModified: String?

    package init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }
}

/// One way a lying server's 206 fails to repeat the validators a partial file was fetched with,
/// for ``Behavior/switchVersionAfterDrop(dropAfter:before:after:newContents:)``: the validators of
/// the first response, those of the lying 206, and what a client's `If-Range` carries.
package struct ValidatorLie: Sendable, CustomStringConvertible {
    /// What the lie is, for test names.
    package var name: String
    /// The validators of the first response (the partial file's).
    package var before: ValidatorHeaders
    /// The validators of the 206 that ignores `If-Range`.
    package var after: ValidatorHeaders
    /// What the resume's `If-Range` carries.
    package var ifRange: String
    package var description: String { name }

    /// The four lies of a server that ignores `If-Range` and still answers 206 with a new
    /// version: (a) no validator after a Last-Modified resume, (b) only Last-Modified after an ETag
    /// resume, (c) the weak `W/"v1"` after the strong `"v1"`, (d) the same ETag with a new
    /// Last-Modified. A client must start the file over for each.
    package static let all: [ValidatorLie] = {
        let date1 = "Mon, 01 Jan 2024 00:00:00 GMT"
        let date2 = "Tue, 02 Jan 2024 00:00:00 GMT"
        return [
            ValidatorLie(
                name: "(a) no validator after a Last-Modified resume", before: .init(lastModified: date1),
                after: .init(), ifRange: date1),
            ValidatorLie(
                name: "(b) only Last-Modified after an ETag resume", before: .init(etag: "\"v1\""),
                after: .init(lastModified: date1), ifRange: "\"v1\""),
            ValidatorLie(
                name: "(c) the weak W/\"v1\" after the strong \"v1\"", before: .init(etag: "\"v1\""),
                after: .init(etag: "W/\"v1\""), ifRange: "\"v1\""),
            ValidatorLie(
                name: "(d) the same ETag, a new Last-Modified", before: .init(etag: "\"v1\"", lastModified: date1),
                after: .init(etag: "\"v1\"", lastModified: date2), ifRange: "\"v1\""),
        ]
    }()
}
