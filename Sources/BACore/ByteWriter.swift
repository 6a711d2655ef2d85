/// Appends little-endian integers and length-prefixed byte strings to a buffer.
package struct ByteWriter: Sendable {
    /// The bytes written so far.
    package private(set) var bytes: [UInt8] = []

    package init() {}

    package mutating func u8(_ value: UInt8) { bytes.append(value) }
    package mutating func bool(_ value: Bool) { bytes.append(value ? 1 : 0) }
    package mutating func u32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
    package mutating func i32(_ value: Int32) { u32(UInt32(bitPattern: value)) }
    package mutating func u64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
    package mutating func i64(_ value: Int64) { u64(UInt64(bitPattern: value)) }

    /// A u32 byte count, then the bytes.
    package mutating func blob<C: Collection>(_ value: C) where C.Element == UInt8 {
        u32(UInt32(truncatingIfNeeded: value.count))
        bytes.append(contentsOf: value)
    }

    /// A u32 byte count, then `count` bytes copied from `pointer` (nothing for a NULL pointer).
    package mutating func blob(_ pointer: UnsafeRawPointer?, count: Int) {
        u32(UInt32(truncatingIfNeeded: count))
        if let pointer, count > 0 { bytes.append(contentsOf: UnsafeRawBufferPointer(start: pointer, count: count)) }
    }

    /// The number of bytes written so far.
    package var count: Int { bytes.count }

    /// Overwrites the u32 at `offset` (to fill in a length once it is known).
    package mutating func patchU32(_ value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for index in 0..<4 { bytes[offset + index] = raw[index] }
        }
    }

    /// Drops everything written after the first `count` bytes.
    package mutating func truncate(to count: Int) { bytes.removeSubrange(count...) }

    /// Removes everything written, keeping the capacity.
    package mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    /// A string as its UTF-8 bytes, length-prefixed.
    package mutating func string(_ value: String) { blob(Array(value.utf8)) }

    /// An optional string: a presence byte, then the string.
    package mutating func optionalString(_ value: String?) {
        bool(value != nil)
        if let value { string(value) }
    }
}
