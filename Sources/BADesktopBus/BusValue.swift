/// A D-Bus value of a basic type, as basd reads a property or writes a signal's argument.
///
/// Containers other than a variant and an `a{sv}` dictionary (``BusArgument``) are not read:
/// a property of another type arrives as ``unsupported(_:)`` with its signature.
package enum BusValue: Sendable, Hashable {
    case bool(Bool)
    case byte(UInt8)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    /// A value of a type basd does not read, with its D-Bus signature.
    case unsupported(String)

    /// The value as an unsigned integer, when it is an integer of any width that fits.
    package var unsignedValue: UInt64? {
        switch self {
        case .byte(let value): UInt64(value)
        case .uint32(let value): UInt64(value)
        case .uint64(let value): value
        case .int32(let value): UInt64(exactly: value)
        case .int64(let value): UInt64(exactly: value)
        default: nil
        }
    }

    /// The value as a string, when it is a string or an object path.
    package var stringValue: String? {
        switch self {
        case .string(let value), .objectPath(let value): value
        default: nil
        }
    }

    /// The value as a boolean, when it is one.
    package var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The D-Bus signature of a basic value (`"b"`, `"u"`, `"s"`, …).
    var signature: String {
        switch self {
        case .bool: "b"
        case .byte: "y"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .unsupported(let signature): signature
        }
    }
}

/// One argument of a signal or a method call basd sends.
package enum BusArgument: Sendable, Hashable {
    /// A basic value, as its own type.
    case value(BusValue)
    /// An `a{sv}` dictionary (a launcher entry's properties), in this order.
    case dictionary([DictionaryEntry])

    /// One entry of an `a{sv}` dictionary.
    package struct DictionaryEntry: Sendable, Hashable {
        package var key: String
        package var value: BusValue
        package init(_ key: String, _ value: BusValue) {
            self.key = key
            self.value = value
        }
    }
}
