/// A strict reader of JSON tokens over UTF-8 bytes, for ``MessageReader``: objects, arrays,
/// strings (every JSON escape, `\uXXXX` surrogate pairs joined, UTF-8 validated), integers in
/// `Int64` / `UInt64` range, `true`, `false` and `null`.
///
/// It is stricter than JSON, never looser than `JSONDecoder`: a fraction or exponent, `-0`, a
/// number out of range, a lone surrogate, invalid UTF-8, a duplicate key, nesting deeper than
/// ``maximumDepth`` throw ``Invalid``, and the caller leaves the message to `JSONDecoder`, whose
/// answer (a value or an error) is the protocol's.
struct JSONCursor {
    /// The input is not something this reader is sure about.
    struct Invalid: Error {}

    /// Objects and arrays nested deeper than this are left to `JSONDecoder` (the protocol's
    /// messages nest 7 deep).
    static let maximumDepth = 32

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0
    /// The bytes of a string with escapes, reused from string to string.
    private var scratch: [UInt8] = []

    /// A cursor at the start of `bytes`, which must outlive it.
    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Reads one value with `body`, and requires nothing but whitespace around it.
    mutating func document<Value>(_ body: (inout JSONCursor) throws(Invalid) -> Value) throws(Invalid) -> Value {
        skipWhitespace()
        let value = try body(&self)
        skipWhitespace()
        guard index == bytes.count else { throw Invalid() }
        return value
    }

    // MARK: Structure

    /// Consumes `{`.
    mutating func beginObject() throws(Invalid) {
        try enter(UInt8(ascii: "{"))
    }

    /// Consumes `[`.
    mutating func beginArray() throws(Invalid) {
        try enter(UInt8(ascii: "["))
    }

    private mutating func enter(_ opening: UInt8) throws(Invalid) {
        guard try next() == opening, depth < Self.maximumDepth else { throw Invalid() }
        index += 1
        depth += 1
    }

    /// The next key of the object begun with ``beginObject()``, as its index in `names` (-1 for
    /// a key not among them), with its `:` consumed; nil after the closing `}`.
    ///
    /// - Parameters:
    ///   - first: true before the object's first key (set to false here).
    ///   - seen: the names read so far, one bit per index: a name read twice throws (what
    ///     `JSONDecoder` makes of a duplicate key is its own business).
    mutating func nextKey(
        _ names: [StaticString], first: inout Bool, seen: inout UInt64
    ) throws(Invalid) -> Int? {
        guard try separator(closing: UInt8(ascii: "}"), first: &first) else { return nil }
        let field = try key(names)
        if field >= 0 {
            guard seen & (1 << UInt64(field)) == 0 else { throw Invalid() }
            seen |= 1 << UInt64(field)
        }
        guard try next() == UInt8(ascii: ":") else { throw Invalid() }
        index += 1
        return field
    }

    /// Whether the array begun with ``beginArray()`` has another element (false after the closing `]`).
    mutating func nextElement(first: inout Bool) throws(Invalid) -> Bool {
        try separator(closing: UInt8(ascii: "]"), first: &first)
    }

    /// Consumes the `,` before a member or element, or the closing bracket (false).
    private mutating func separator(closing: UInt8, first: inout Bool) throws(Invalid) -> Bool {
        let byte = try next()
        if byte == closing {
            index += 1
            depth -= 1
            return false
        }
        if first {
            first = false
        } else {
            guard byte == UInt8(ascii: ",") else { throw Invalid() }
            index += 1
        }
        return true
    }

    /// Reads a key and finds it in `names`.
    private mutating func key(_ names: [StaticString]) throws(Invalid) -> Int {
        guard try next() == UInt8(ascii: "\"") else { throw Invalid() }
        let start = index + 1
        if let end = try plainStringEnd() {
            return Self.find(UnsafeBufferPointer(rebasing: bytes[start..<end]), in: names)
        }
        try unescape(from: start)
        return scratch.withUnsafeBufferPointer { Self.find($0, in: names) }
    }

    /// The index of `key` in `names`, or -1. A key with a byte outside ASCII is never one of them
    /// (the names are ASCII; none has a canonically equivalent non-ASCII spelling, as K has).
    private static func find(_ key: UnsafeBufferPointer<UInt8>, in names: [StaticString]) -> Int {
        for (position, name) in names.enumerated() where name.utf8CodeUnitCount == key.count {
            let text = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
            if text.elementsEqual(key) { return position }
        }
        return -1
    }

    // MARK: Values

    /// Consumes `null` and returns true, or returns false when the next value is something else.
    mutating func null() throws(Invalid) -> Bool {
        guard try next() == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    /// `true` or `false`.
    mutating func bool() throws(Invalid) -> Bool {
        switch try next() {
        case UInt8(ascii: "t"):
            try literal("true")
            return true
        case UInt8(ascii: "f"):
            try literal("false")
            return false
        default: throw Invalid()
        }
    }

    private mutating func literal(_ text: StaticString) throws(Invalid) {
        let count = text.utf8CodeUnitCount
        guard bytes.count - index >= count,
            UnsafeBufferPointer(start: text.utf8Start, count: count).elementsEqual(bytes[index..<index + count])
        else { throw Invalid() }
        index += count
    }

    /// An integer in `Int64` range.
    mutating func int64() throws(Invalid) -> Int64 {
        let negative = try next() == UInt8(ascii: "-")
        if negative { index += 1 }
        let magnitude = try digits()
        if negative {
            // -0 is left to JSONDecoder.
            guard magnitude != 0, magnitude <= UInt64(Int64.max) + 1 else { throw Invalid() }
            return Int64(truncatingIfNeeded: 0 &- magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { throw Invalid() }
        return Int64(magnitude)
    }

    /// An integer in `UInt64` range.
    mutating func uint64() throws(Invalid) -> UInt64 {
        try next()
        return try digits()
    }

    /// An `Int` (64 bits wide on the platforms basd runs on).
    mutating func int() throws(Invalid) -> Int {
        let value = try int64()
        guard let exact = Int(exactly: value) else { throw Invalid() }
        return exact
    }

    /// The digits of an integer without leading zeros; a fraction or an exponent throws.
    private mutating func digits() throws(Invalid) -> UInt64 {
        let start = index
        var value: UInt64 = 0
        while index < bytes.count {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            let (times10, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times10.addingReportingOverflow(UInt64(digit))
            guard !overflow, !carry else { throw Invalid() }
            value = sum
            index += 1
        }
        guard index > start, index - start == 1 || bytes[start] != UInt8(ascii: "0") else { throw Invalid() }
        if index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): throw Invalid()
            default: break
            }
        }
        return value
    }

    /// A string.
    mutating func string() throws(Invalid) -> String {
        guard try next() == UInt8(ascii: "\"") else { throw Invalid() }
        let start = index + 1
        if let end = try plainStringEnd() {
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
        try unescape(from: start)
        return String(decoding: scratch, as: UTF8.self)
    }

    /// Scans the string whose opening quote is at `index`. Without escapes: moves past its
    /// closing quote and returns the end of its contents (validated UTF-8). With one: stops at
    /// the backslash and returns nil.
    private mutating func plainStringEnd() throws(Invalid) -> Int? {
        index += 1
        let start = index
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                if !ascii { try Self.validateUTF8(UnsafeBufferPointer(rebasing: bytes[start..<index])) }
                index += 1
                return index - 1
            }
            if byte == UInt8(ascii: "\\") { return nil }
            guard byte >= 0x20 else { throw Invalid() }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        throw Invalid()
    }

    /// Reads the rest of a string with escapes (contents from `start`, `index` at its first
    /// backslash) into ``scratch``, validated, and moves past its closing quote.
    private mutating func unescape(from start: Int) throws(Invalid) {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                try scratch.withUnsafeBufferPointer { (text) throws(Invalid) in try Self.validateUTF8(text) }
                return
            case UInt8(ascii: "\\"):
                try escape()
            case 0..<0x20:
                throw Invalid()
            default:
                scratch.append(byte)
            }
        }
        throw Invalid()
    }

    /// One escape, after its backslash.
    private mutating func escape() throws(Invalid) {
        guard index < bytes.count else { throw Invalid() }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(byte)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0c)
        case UInt8(ascii: "n"): scratch.append(0x0a)
        case UInt8(ascii: "r"): scratch.append(0x0d)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try hex4())
            if 0xd800..<0xdc00 ~= scalar {
                // A high surrogate: only with a low one after it.
                guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u")
                else { throw Invalid() }
                index += 2
                let low = UInt32(try hex4())
                guard 0xdc00..<0xe000 ~= low else { throw Invalid() }
                scalar = 0x10000 + ((scalar - 0xd800) << 10) + (low - 0xdc00)
            } else if 0xdc00..<0xe000 ~= scalar {
                throw Invalid()
            }
            guard let unicode = Unicode.Scalar(scalar), let encoded = UTF8.encode(unicode) else { throw Invalid() }
            scratch.append(contentsOf: encoded)
        default: throw Invalid()
        }
    }

    private mutating func hex4() throws(Invalid) -> UInt16 {
        guard bytes.count - index >= 4 else { throw Invalid() }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw Invalid()
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    /// Throws unless `text` is well-formed UTF-8 (The Unicode Standard, table 3-7: no overlong
    /// forms, no surrogates, nothing above U+10FFFF).
    private static func validateUTF8(_ text: UnsafeBufferPointer<UInt8>) throws(Invalid) {
        var position = 0
        while position < text.count {
            let lead = text[position]
            if lead < 0x80 {
                position += 1
                continue
            }
            let count: Int
            var second: ClosedRange<UInt8> = 0x80...0xbf
            switch lead {
            case 0xc2...0xdf: count = 2
            case 0xe0:
                count = 3
                second = 0xa0...0xbf
            case 0xe1...0xec, 0xee...0xef: count = 3
            case 0xed:
                count = 3
                second = 0x80...0x9f
            case 0xf0:
                count = 4
                second = 0x90...0xbf
            case 0xf1...0xf3: count = 4
            case 0xf4:
                count = 4
                second = 0x80...0x8f
            default: throw Invalid()
            }
            guard text.count - position >= count, second.contains(text[position + 1]) else { throw Invalid() }
            for offset in 2..<count where text[position + offset] & 0xc0 != 0x80 { throw Invalid() }
            position += count
        }
    }

    /// Skips one value of any kind, checking it as strictly as the rest.
    mutating func skipValue() throws(Invalid) {
        switch try next() {
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "{"):
            try beginObject()
            var first = true
            var seen: UInt64 = 0
            while try nextKey([], first: &first, seen: &seen) != nil { try skipValue() }
        case UInt8(ascii: "["):
            try beginArray()
            var first = true
            while try nextElement(first: &first) { try skipValue() }
        case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try bool()
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "-"): _ = try int64()
        default: _ = try uint64()
        }
    }

    // MARK: Bytes

    /// Skips whitespace and returns the next byte (not consumed).
    @discardableResult
    private mutating func next() throws(Invalid) -> UInt8 {
        skipWhitespace()
        guard index < bytes.count else { throw Invalid() }
        return bytes[index]
    }

    /// JSON's whitespace: space, tab, line feed, carriage return.
    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): index += 1
            default: return
            }
        }
    }
}
