import Foundation

// Apple's interpolations of errors and objects, and the `attributes:` forms of every value
// (`attributes` names how Console shows a value; nothing here reads it). Each value is private by
// default, as on Apple's systems; a nil object or error is written `(null)`, as Apple's log writes
// a nil `%@`.
extension OSLogInterpolation {
    /// Apple's text for a nil object or error.
    static let null = "(null)"

    /// An error, by `String(describing:)`: private unless `privacy` says otherwise.
    public mutating func appendInterpolation(
        _ error: @autoclosure @escaping () -> any Error, privacy: OSLogPrivacy = .auto, attributes: String = ""
    ) {
        parts.append { Redaction.apply(privacy, isScalar: false, { String(describing: error()) }, align: .none) }
    }

    /// An optional error, as Apple's samples log one (`"Failed to acquire lock: \(error)"` with
    /// `error: (any Error)?`): the error, or `(null)`.
    public mutating func appendInterpolation(
        _ error: @autoclosure @escaping () -> (any Error)?, privacy: OSLogPrivacy = .auto, attributes: String = ""
    ) {
        parts.append {
            Redaction.apply(
                privacy, isScalar: false, { error().map { String(describing: $0) } ?? Self.null }, align: .none)
        }
    }

    /// An object, by its `description`: private unless `privacy` says otherwise.
    public mutating func appendInterpolation(
        _ argumentObject: @autoclosure @escaping () -> NSObject, privacy: OSLogPrivacy = .auto
    ) {
        parts.append { Redaction.apply(privacy, isScalar: false, { argumentObject().description }, align: .none) }
    }

    /// An object, by its `description`, with Console attributes.
    public mutating func appendInterpolation(
        _ argumentObject: @autoclosure @escaping () -> NSObject, privacy: OSLogPrivacy = .auto, attributes: String
    ) {
        appendInterpolation(argumentObject(), privacy: privacy)
    }

    /// An optional object: its `description`, or `(null)`.
    public mutating func appendInterpolation(
        _ argumentObject: @autoclosure @escaping () -> NSObject?, privacy: OSLogPrivacy = .auto
    ) {
        parts.append {
            Redaction.apply(privacy, isScalar: false, { argumentObject()?.description ?? Self.null }, align: .none)
        }
    }

    /// An optional object, with Console attributes.
    public mutating func appendInterpolation(
        _ argumentObject: @autoclosure @escaping () -> NSObject?, privacy: OSLogPrivacy = .auto, attributes: String
    ) {
        appendInterpolation(argumentObject(), privacy: privacy)
    }

    /// A string, with Console attributes.
    public mutating func appendInterpolation(
        _ argumentString: @autoclosure @escaping () -> String, align: OSLogStringAlignment = .none,
        privacy: OSLogPrivacy = .auto, attributes: String
    ) {
        appendInterpolation(argumentString(), align: align, privacy: privacy)
    }

    /// A value described by `description`, with Console attributes.
    public mutating func appendInterpolation<T: CustomStringConvertible>(
        _ value: @autoclosure @escaping () -> T, align: OSLogStringAlignment = .none, privacy: OSLogPrivacy = .auto,
        attributes: String
    ) {
        appendInterpolation(value(), align: align, privacy: privacy)
    }

    /// An integer in `format`, with Console attributes.
    public mutating func appendInterpolation<T: FixedWidthInteger>(
        _ number: @autoclosure @escaping () -> T, format: OSLogIntegerFormatting = .decimal,
        align: OSLogStringAlignment = .none, privacy: OSLogPrivacy = .auto, attributes: String
    ) {
        appendInterpolation(number(), format: format, align: align, privacy: privacy)
    }

    /// A `Double` in `format`, with Console attributes.
    public mutating func appendInterpolation(
        _ number: @autoclosure @escaping () -> Double, format: OSLogFloatFormatting = .fixed,
        align: OSLogStringAlignment = .none, privacy: OSLogPrivacy = .auto, attributes: String
    ) {
        appendInterpolation(number(), format: format, align: align, privacy: privacy)
    }

    /// A `Float` in `format`, with Console attributes.
    public mutating func appendInterpolation(
        _ number: @autoclosure @escaping () -> Float, format: OSLogFloatFormatting = .fixed,
        align: OSLogStringAlignment = .none, privacy: OSLogPrivacy = .auto, attributes: String
    ) {
        appendInterpolation(number(), format: format, align: align, privacy: privacy)
    }
}
