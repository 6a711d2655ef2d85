/// The validators a partial file's bytes were fetched with, and the one rule for appending to it.
///
/// **The resume rule.** A 206 is appended to a partial file only when it repeats *every* validator
/// the partial file was fetched with, strong and byte-equal: the strong entity tag if there was
/// one, and `Last-Modified` if there was one. Anything else — a validator missing from the 206, a
/// weak tag where a strong one was, another kind, or a changed value — means the server may have
/// ignored `If-Range` and sent bytes of another version, so the file starts over from byte 0.
/// (`docs/downloads.md`, "Resume".)
///
/// Stored (in the `.validator` sidecar and in basd's store) as text: the entity tag and the date on
/// lines of their own, the tag first. A single line is what earlier versions wrote, one validator
/// of either kind, and reads the same way.
package struct ResumeValidator: Sendable, Equatable {
    /// The strong entity tag, quoted (`"…"`), if the response had one.
    package var entityTag: String?
    /// The `Last-Modified` value, exactly as the server sent it, if it had one.
    package var lastModified: String?

    /// A validator with at least one of the two; nil when there is neither (nothing to resume with).
    package init?(entityTag: String?, lastModified: String?) {
        let tag = entityTag.flatMap { Self.isStrongTag($0) ? $0 : nil }
        let date = lastModified.flatMap { $0.isEmpty ? nil : $0 }
        guard tag != nil || date != nil else { return nil }
        self.entityTag = tag
        self.lastModified = date
    }

    /// The validators of a response head (a weak tag does not count: it cannot validate a range).
    package init?(_ head: ResponseHead) {
        self.init(entityTag: head["etag"], lastModified: head["last-modified"])
    }

    /// Reads the stored text (``stored``, or one validator of either kind as older versions kept).
    package init?(stored: String) {
        var tag: String?
        var date: String?
        for line in stored.split(separator: "\n", omittingEmptySubsequences: true) {
            let value = String(line)
            if value.hasPrefix("\"") {
                if tag == nil { tag = value }
            } else if !value.hasPrefix("W/") {
                if date == nil { date = value }
            }
        }
        self.init(entityTag: tag, lastModified: date)
    }

    /// The text kept beside the partial file and in basd's store.
    package var stored: String {
        [entityTag, lastModified].compactMap { $0 }.joined(separator: "\n")
    }

    /// What `If-Range` carries: the entity tag, else the date (RFC 9110 §13.1.5 takes one).
    package var ifRange: String { entityTag ?? lastModified ?? "" }

    /// Nil when `head` (a 206) repeats every validator of this one, strong and byte-equal; else
    /// why it does not, for the log.
    package func mismatch(in head: ResponseHead) -> String? {
        if let entityTag {
            guard let answered = head["etag"] else { return "no ETag, but the partial file is \(entityTag)" }
            guard answered == entityTag else {
                return answered.hasPrefix("W/")
                    ? "the weak ETag \(answered), but the partial file is the strong \(entityTag)"
                    : "ETag \(answered), but the partial file is \(entityTag)"
            }
        }
        if let lastModified {
            guard let answered = head["last-modified"] else {
                return "no Last-Modified, but the partial file is of \(lastModified)"
            }
            guard answered == lastModified else {
                return "Last-Modified \(answered), but the partial file is of \(lastModified)"
            }
        }
        return nil
    }

    /// Whether `tag` is a strong entity tag: quoted, not `W/`.
    static func isStrongTag(_ tag: String) -> Bool {
        tag.count >= 2 && tag.hasPrefix("\"") && tag.hasSuffix("\"")
    }
}
