/// Reads what ``ByteWriter`` wrote, throwing ``WireError`` on any truncated or oversized field.
package struct ByteReader: Sendable {
    private let bytes: [UInt8]
    private var offset: Int = 0

    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Whether every byte was consumed.
    package var isAtEnd: Bool { offset == bytes.count }

    private mutating func take(_ count: Int, _ what: String) throws(WireError) -> ArraySlice<UInt8> {
        guard count >= 0, bytes.count - offset >= count else {
            throw WireError("truncated \(what): needs \(count) bytes, \(bytes.count - offset) left")
        }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    package mutating func u8() throws(WireError) -> UInt8 { try take(1, "u8").first! }

    package mutating func bool() throws(WireError) -> Bool {
        switch try u8() {
        case 0: return false
        case 1: return true
        case let other: throw WireError("invalid boolean byte \(other)")
        }
    }

    package mutating func u32() throws(WireError) -> UInt32 {
        let bytes = try take(4, "u32")
        let i = bytes.startIndex
        return UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24
    }

    package mutating func i32() throws(WireError) -> Int32 { Int32(bitPattern: try u32()) }

    package mutating func u64() throws(WireError) -> UInt64 {
        let low = UInt64(try u32())
        return low | UInt64(try u32()) << 32
    }

    package mutating func i64() throws(WireError) -> Int64 { Int64(bitPattern: try u64()) }

    package mutating func blob() throws(WireError) -> [UInt8] {
        let count = Int(try u32())
        return Array(try take(count, "blob"))
    }

    /// A string; bytes that are not valid UTF-8 are repaired (U+FFFD) and reported through
    /// `valid` so a caller can reject the value instead of trusting a repaired copy.
    package mutating func string(valid: inout Bool) throws(WireError) -> String {
        let count = Int(try u32())
        let raw = try take(count, "string")
        if let decoded = String(validating: raw, as: UTF8.self) { return decoded }
        valid = false
        return String(decoding: raw, as: UTF8.self)
    }

    /// A string that must be valid UTF-8.
    package mutating func string() throws(WireError) -> String {
        var valid = true
        let value = try string(valid: &valid)
        guard valid else { throw WireError("string is not valid UTF-8") }
        return value
    }

    package mutating func optionalString() throws(WireError) -> String? {
        try bool() ? try string() : nil
    }
}
