import Foundation

/// Who may see an interpolated value, as Apple's `OSLogPrivacy` (``Logger`` has the rules).
public struct OSLogPrivacy: Equatable, Sendable {
    enum Kind: Equatable, Sendable { case `public`, `private`, sensitive, auto }

    /// How a hidden value is shown.
    public enum Mask: Equatable, Sendable {
        /// `<mask.hash: '…'>`: a hash, equal for equal values.
        case hash
        /// `<private>`.
        case none
    }

    let kind: Kind
    let mask: Mask

    /// Shown.
    public static let `public` = OSLogPrivacy(kind: .public, mask: .none)
    /// Hidden: `<private>`.
    public static let `private` = OSLogPrivacy(kind: .private, mask: .none)
    /// Hidden always (Apple hides it even with private data enabled; so does this library): `<private>`.
    public static let sensitive = OSLogPrivacy(kind: .sensitive, mask: .none)
    /// Numbers, booleans and types shown; strings and other values hidden.
    public static let auto = OSLogPrivacy(kind: .auto, mask: .none)

    /// Hidden, shown as `mask`.
    public static func `private`(mask: Mask) -> OSLogPrivacy { OSLogPrivacy(kind: .private, mask: mask) }
    /// Hidden always, shown as `mask`.
    public static func sensitive(mask: Mask) -> OSLogPrivacy { OSLogPrivacy(kind: .sensitive, mask: mask) }
    /// As ``auto``, a hidden value shown as `mask`.
    public static func auto(mask: Mask) -> OSLogPrivacy { OSLogPrivacy(kind: .auto, mask: mask) }
}

/// Padding of an interpolated value, as Apple's `OSLogStringAlignment`.
public struct OSLogStringAlignment {
    let columns: (() -> Int)?
    let left: Bool

    /// As it is.
    public static var none: OSLogStringAlignment { OSLogStringAlignment(columns: nil, left: false) }

    /// Padded with spaces on the right to `columns` characters.
    public static func left(columns: @escaping @autoclosure () -> Int) -> OSLogStringAlignment {
        OSLogStringAlignment(columns: columns, left: true)
    }

    /// Padded with spaces on the left to `columns` characters.
    public static func right(columns: @escaping @autoclosure () -> Int) -> OSLogStringAlignment {
        OSLogStringAlignment(columns: columns, left: false)
    }

    func apply(_ text: String) -> String {
        guard let columns else { return text }
        let padding = String(repeating: " ", count: max(0, columns() - text.count))
        return left ? text + padding : padding + text
    }
}

/// How an integer is written, as Apple's `OSLogIntegerFormatting`.
public struct OSLogIntegerFormatting {
    let radix: Int
    let explicitPositiveSign: Bool
    let includePrefix: Bool
    let uppercase: Bool
    let minDigits: (() -> Int)?

    /// Decimal.
    public static var decimal: OSLogIntegerFormatting { .decimal(explicitPositiveSign: false) }

    /// Decimal, with `+` before a positive number if asked.
    public static func decimal(explicitPositiveSign: Bool = false) -> OSLogIntegerFormatting {
        OSLogIntegerFormatting(
            radix: 10, explicitPositiveSign: explicitPositiveSign, includePrefix: false, uppercase: false,
            minDigits: nil)
    }

    /// Decimal, zero-padded to `minDigits` digits.
    public static func decimal(
        explicitPositiveSign: Bool = false, minDigits: @escaping @autoclosure () -> Int
    ) -> OSLogIntegerFormatting {
        OSLogIntegerFormatting(
            radix: 10, explicitPositiveSign: explicitPositiveSign, includePrefix: false, uppercase: false,
            minDigits: minDigits)
    }

    /// Hexadecimal.
    public static var hex: OSLogIntegerFormatting { .hex(explicitPositiveSign: false) }

    /// Hexadecimal, with `0x` and upper-case digits if asked.
    public static func hex(
        explicitPositiveSign: Bool = false, includePrefix: Bool = false, uppercase: Bool = false
    ) -> OSLogIntegerFormatting {
        OSLogIntegerFormatting(
            radix: 16, explicitPositiveSign: explicitPositiveSign, includePrefix: includePrefix,
            uppercase: uppercase, minDigits: nil)
    }

    /// Hexadecimal, zero-padded to `minDigits` digits.
    public static func hex(
        explicitPositiveSign: Bool = false, includePrefix: Bool = false, uppercase: Bool = false,
        minDigits: @escaping @autoclosure () -> Int
    ) -> OSLogIntegerFormatting {
        OSLogIntegerFormatting(
            radix: 16, explicitPositiveSign: explicitPositiveSign, includePrefix: includePrefix,
            uppercase: uppercase, minDigits: minDigits)
    }

    /// Octal.
    public static var octal: OSLogIntegerFormatting { .octal(explicitPositiveSign: false) }

    /// Octal, with `0` before it if asked.
    public static func octal(
        explicitPositiveSign: Bool = false, includePrefix: Bool = false, uppercase: Bool = false
    ) -> OSLogIntegerFormatting {
        OSLogIntegerFormatting(
            radix: 8, explicitPositiveSign: explicitPositiveSign, includePrefix: includePrefix,
            uppercase: uppercase, minDigits: nil)
    }

    /// Octal, zero-padded to `minDigits` digits.
    public static func octal(
        explicitPositiveSign: Bool = false, includePrefix: Bool = false, uppercase: Bool = false,
        minDigits: @escaping @autoclosure () -> Int
    ) -> OSLogIntegerFormatting {
        OSLogIntegerFormatting(
            radix: 8, explicitPositiveSign: explicitPositiveSign, includePrefix: includePrefix,
            uppercase: uppercase, minDigits: minDigits)
    }

    func format<T: FixedWidthInteger>(_ value: T) -> String {
        var digits = String(value.magnitude, radix: radix, uppercase: uppercase)
        if let minDigits, digits.count < minDigits() {
            digits = String(repeating: "0", count: minDigits() - digits.count) + digits
        }
        if includePrefix { digits = (radix == 16 ? "0x" : radix == 8 ? "0" : "") + digits }
        if value < 0 { return "-" + digits }
        return explicitPositiveSign ? "+" + digits : digits
    }
}

/// How a floating-point number is written, as Apple's `OSLogFloatFormatting` (`printf`'s `%f`,
/// `%e`, `%g`).
public struct OSLogFloatFormatting {
    let conversion: Character
    let precision: (() -> Int)?
    let explicitPositiveSign: Bool
    let uppercase: Bool

    /// `%f`: fixed point, 6 decimals.
    public static var fixed: OSLogFloatFormatting { .fixed(explicitPositiveSign: false) }

    /// `%f`, with `+` before a positive number if asked.
    public static func fixed(explicitPositiveSign: Bool = false, uppercase: Bool = false) -> OSLogFloatFormatting {
        OSLogFloatFormatting(
            conversion: "f", precision: nil, explicitPositiveSign: explicitPositiveSign, uppercase: uppercase)
    }

    /// `%.Nf`: `precision` decimals.
    public static func fixed(
        precision: @escaping @autoclosure () -> Int, explicitPositiveSign: Bool = false, uppercase: Bool = false
    ) -> OSLogFloatFormatting {
        OSLogFloatFormatting(
            conversion: "f", precision: precision, explicitPositiveSign: explicitPositiveSign, uppercase: uppercase)
    }

    /// `%e`: exponent notation.
    public static var exponential: OSLogFloatFormatting { .exponential(explicitPositiveSign: false) }

    /// `%e`, with `+` before a positive number and `E` if asked.
    public static func exponential(
        explicitPositiveSign: Bool = false, uppercase: Bool = false
    ) -> OSLogFloatFormatting {
        OSLogFloatFormatting(
            conversion: "e", precision: nil, explicitPositiveSign: explicitPositiveSign, uppercase: uppercase)
    }

    /// `%.Ne`: exponent notation, `precision` decimals.
    public static func exponential(
        precision: @escaping @autoclosure () -> Int, explicitPositiveSign: Bool = false, uppercase: Bool = false
    ) -> OSLogFloatFormatting {
        OSLogFloatFormatting(
            conversion: "e", precision: precision, explicitPositiveSign: explicitPositiveSign, uppercase: uppercase)
    }

    /// `%g`: the shorter of the two.
    public static var hybrid: OSLogFloatFormatting { .hybrid(explicitPositiveSign: false) }

    /// `%g`, with `+` before a positive number and `E` if asked.
    public static func hybrid(explicitPositiveSign: Bool = false, uppercase: Bool = false) -> OSLogFloatFormatting {
        OSLogFloatFormatting(
            conversion: "g", precision: nil, explicitPositiveSign: explicitPositiveSign, uppercase: uppercase)
    }

    /// `%.Ng`: the shorter of the two, `precision` significant digits.
    public static func hybrid(
        precision: @escaping @autoclosure () -> Int, explicitPositiveSign: Bool = false, uppercase: Bool = false
    ) -> OSLogFloatFormatting {
        OSLogFloatFormatting(
            conversion: "g", precision: precision, explicitPositiveSign: explicitPositiveSign, uppercase: uppercase)
    }

    func format(_ value: Double) -> String {
        var specifier = "%" + (explicitPositiveSign ? "+" : "")
        if let precision { specifier += ".\(max(0, precision()))" }
        specifier += uppercase ? conversion.uppercased() : String(conversion)
        return String(format: specifier, value)
    }
}

/// How a `Bool` is written, as Apple's `OSLogBoolFormat`.
public enum OSLogBoolFormat: Sendable {
    /// `true` / `false`.
    case truth
    /// `YES` / `NO`.
    case answer

    func format(_ value: Bool) -> String {
        switch self {
        case .truth: value ? "true" : "false"
        case .answer: value ? "YES" : "NO"
        }
    }
}
