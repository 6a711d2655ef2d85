/// What to do with a response, decided from its head before any body byte is written.
///
/// This is where "never splice bytes of two versions" is enforced: a body is appended to the
/// partial file only when the response proves it continues exactly those bytes.
package enum ResponseDecision: Equatable, Sendable {
    /// Write the body at `offset` (0 for a fresh file). `total` is the whole file's size if known.
    case write(offset: Int64, total: Int64?, validator: String?)
    /// The partial file already holds the whole resource (416 for a range starting at its end).
    case alreadyComplete(total: Int64)
    /// Follow the redirect (after checking the hop).
    case redirect(location: String)
    /// The server wants credentials.
    case needsCredentials(challenge: String)
    /// Try again later (408, 429, 5xx), honouring `Retry-After`.
    case retry(reason: String, retryAfter: String?)
    /// Start over without a range (the partial file is not a prefix of this resource).
    case restartWithoutRange(reason: String)
    /// Give up.
    case fail(DownloadError)

    /// Decides for one response.
    /// - Parameters:
    ///   - head: The response's status and headers.
    ///   - requestedOffset: The `Range` start sent (0 = no Range header).
    ///   - sentValidator: The partial file's validators (``ResumeValidator/stored``), sent in
    ///     `If-Range`, if any.
    ///   - expectedSize: The size the file must have, if known.
    ///   - url: For messages.
    package static func decide(
        _ head: ResponseHead, requestedOffset: Int64, sentValidator: String?, expectedSize: Int64?, url: String
    ) -> ResponseDecision {
        let status = head.status
        let what = "server answered \(status)\(head.reason.isEmpty ? "" : " \(head.reason)") for \(url)"
        switch status {
        case 206:
            guard requestedOffset > 0 else {
                return .fail(DownloadError(.protocolViolation, "\(what) without a Range request", httpStatus: status))
            }
            guard let rangeHeader = head["content-range"], let range = ContentRange(rangeHeader),
                let first = range.first
            else {
                return .restartWithoutRange(reason: "\(what) with no usable Content-Range")
            }
            guard first == requestedOffset else {
                return .restartWithoutRange(
                    reason: "\(what) with Content-Range starting at \(first), but \(requestedOffset) was requested")
            }
            // The one resume rule (ResumeValidator): the 206 must repeat every validator the
            // partial file was fetched with, strong and byte-equal; otherwise the server may have
            // ignored If-Range and these bytes belong to another version.
            guard let sent = sentValidator.flatMap(ResumeValidator.init(stored:)) else {
                return .restartWithoutRange(
                    reason: "\(what), but the partial file has no validator to check it against")
            }
            if let mismatch = sent.mismatch(in: head) {
                return .restartWithoutRange(reason: "\(what) with \(mismatch)")
            }
            if let expectedSize, let total = range.total, total != expectedSize {
                return .fail(
                    DownloadError(
                        .sizeMismatch, "\(what): the file is \(total) bytes, expected \(expectedSize)",
                        httpStatus: status))
            }
            return .write(offset: requestedOffset, total: range.total, validator: sent.stored)
        case 200:
            if let expectedSize, let length = head.contentLength, length != expectedSize {
                return .fail(
                    DownloadError(
                        .sizeMismatch, "\(what): it declared \(length) bytes, expected \(expectedSize)",
                        httpStatus: status))
            }
            // A 200 to a ranged request is the whole (maybe new) file: start a fresh partial file.
            return .write(offset: 0, total: head.contentLength, validator: ResumeValidator(head)?.stored)
        case 416:
            if let rangeHeader = head["content-range"], let range = ContentRange(rangeHeader), let total = range.total {
                if total == requestedOffset && (expectedSize == nil || expectedSize == total) {
                    return .alreadyComplete(total: total)
                }
                return .restartWithoutRange(
                    reason: "\(what): the file is \(total) bytes, the partial file has \(requestedOffset)")
            }
            return .restartWithoutRange(reason: what)
        case 301, 302, 303, 307, 308:
            guard let location = head["location"], !location.isEmpty else {
                return .fail(DownloadError(.redirect, "\(what) without a Location", httpStatus: status))
            }
            return .redirect(location: location)
        case 401:
            return .needsCredentials(challenge: head["www-authenticate"] ?? "")
        case 408, 429, 500...599:
            return .retry(reason: what, retryAfter: head["retry-after"])
        default:
            return .fail(DownloadError(.serverStatus, what, httpStatus: status))
        }
    }

    /// Decides for one response to a content-addressed request (``DownloadRequest/sink``): its
    /// bytes are fixed by the owner (who checks each unit as it lands), so no validator is needed
    /// and any response that holds the bytes from `requestedOffset` on is used. A 200, or a 206
    /// starting before `requestedOffset`, is written from its own start (the bytes before
    /// `requestedOffset` are dropped by the transfer); a 206 starting after it, or without a usable
    /// `Content-Range`, starts again without a range; a size other than `expectedSize` fails (the
    /// server has another file). Other statuses are decided as ``decide(_:requestedOffset:sentValidator:expectedSize:url:)`` does.
    package static func decideContentAddressed(
        _ head: ResponseHead, requestedOffset: Int64, expectedSize: Int64, url: String
    ) -> ResponseDecision {
        let status = head.status
        let what = "server answered \(status)\(head.reason.isEmpty ? "" : " \(head.reason)") for \(url)"
        switch status {
        case 206:
            guard let rangeHeader = head["content-range"], let range = ContentRange(rangeHeader),
                let first = range.first
            else {
                return .restartWithoutRange(reason: "\(what) with no usable Content-Range")
            }
            if let total = range.total, total != expectedSize {
                return .fail(
                    DownloadError(
                        .sizeMismatch, "\(what): the file is \(total) bytes, expected \(expectedSize)",
                        httpStatus: status))
            }
            guard first <= requestedOffset, first < expectedSize else {
                return .restartWithoutRange(
                    reason: "\(what) with Content-Range starting at \(first), but \(requestedOffset) was requested")
            }
            return .write(offset: first, total: expectedSize, validator: nil)
        case 200:
            if let length = head.contentLength, length != expectedSize {
                return .fail(
                    DownloadError(
                        .sizeMismatch, "\(what): it declared \(length) bytes, expected \(expectedSize)",
                        httpStatus: status))
            }
            return .write(offset: 0, total: expectedSize, validator: nil)
        case 416:
            if requestedOffset == expectedSize { return .alreadyComplete(total: expectedSize) }
            return .restartWithoutRange(reason: what)
        default:
            return decide(
                head, requestedOffset: requestedOffset, sentValidator: nil, expectedSize: expectedSize, url: url)
        }
    }
}
