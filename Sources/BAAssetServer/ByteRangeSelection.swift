/// What part of a representation a request gets, from its `Range` and `If-Range` headers (RFC 9110 §14).
///
/// Only a single range of the `bytes` unit is honoured. A header that is syntactically invalid, names another
/// unit or several ranges is ignored (the whole representation is sent with 200), which RFC 9110 §14.2 allows.
enum ByteRangeSelection: Equatable, Sendable {
    /// 200: the whole representation.
    case whole
    /// 206: the bytes `range` (never empty, within the representation).
    case partial(Range<Int>)
    /// 416: no byte of the range exists.
    case unsatisfiable

    /// Chooses the answer for `range` and `ifRange` header values, a representation of `size` bytes and its
    /// validators. An `If-Range` that does not match the validators means the client's copy is stale:
    /// it gets the whole new representation instead of a piece to splice onto the old one.
    static func select(range: String?, ifRange: String?, size: Int, validators: Validators) -> ByteRangeSelection {
        guard let range else { return .whole }
        if let ifRange, !validators.matches(ifRange: ifRange) { return .whole }
        guard let spec = ByteRangeSpec(parsing: range) else { return .whole }
        return spec.resolve(size: size)
    }
}

/// One parsed `bytes=` range: `a-b`, `a-` or `-n`.
enum ByteRangeSpec: Equatable, Sendable {
    case closed(first: Int, last: Int)
    case from(first: Int)
    case suffix(length: Int)

    /// Parses `bytes=a-b`, `bytes=a-`, `bytes=-n`; `nil` for anything else (several ranges, other units,
    /// `last < first`, non-digits, numbers too large for `Int`).
    init?(parsing header: String) {
        let header = header.trimmingSpaces()
        guard let equals = header.firstIndex(of: "="),
            header[..<equals].trimmingSpaces().lowercased() == "bytes"
        else { return nil }
        let set = header[header.index(after: equals)...].trimmingSpaces()
        guard !set.contains(","), let dash = set.firstIndex(of: "-") else { return nil }
        let firstText = set[..<dash].trimmingSpaces()
        let lastText = set[set.index(after: dash)...].trimmingSpaces()
        let first = Self.number(firstText)
        let last = Self.number(lastText)
        switch (firstText.isEmpty, lastText.isEmpty) {
        case (true, false):
            guard let last else { return nil }
            self = .suffix(length: last)
        case (false, true):
            guard let first else { return nil }
            self = .from(first: first)
        case (false, false):
            guard let first, let last, first <= last else { return nil }
            self = .closed(first: first, last: last)
        case (true, true):
            return nil
        }
    }

    /// The selection for a representation of `size` bytes; an end past the last byte is clamped to it.
    func resolve(size: Int) -> ByteRangeSelection {
        switch self {
        case .closed(let first, let last):
            guard first < size else { return .unsatisfiable }
            return .partial(first..<(min(last, size - 1) + 1))
        case .from(let first):
            guard first < size else { return .unsatisfiable }
            return .partial(first..<size)
        case .suffix(let length):
            // A suffix of zero bytes, or any suffix of an empty representation, selects nothing.
            guard length > 0, size > 0 else { return .unsatisfiable }
            return .partial(max(0, size - length)..<size)
        }
    }

    private static func number(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }
}
