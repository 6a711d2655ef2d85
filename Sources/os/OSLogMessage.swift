import Foundation

/// A log message with interpolated values and their privacy, as Apple's `OSLogMessage`: what
/// ``Logger``'s methods take, written as a string literal.
///
/// ```swift
/// logger.info("got \(bytes, format: .decimal(minDigits: 4)) bytes for \(name, privacy: .public)")
/// ```
public struct OSLogMessage: ExpressibleByStringInterpolation, ExpressibleByStringLiteral {
    let interpolation: OSLogInterpolation

    /// A message with no interpolated value.
    public init(stringLiteral value: String) {
        var interpolation = OSLogInterpolation(literalCapacity: value.utf8.count, interpolationCount: 0)
        interpolation.appendLiteral(value)
        self.interpolation = interpolation
    }

    /// A message with interpolated values.
    public init(stringInterpolation: OSLogInterpolation) {
        interpolation = stringInterpolation
    }

    /// The text logged: literals and values, private values redacted.
    var rendered: String {
        interpolation.parts.map { $0() }.joined()
    }
}

/// The interpolations an ``OSLogMessage`` accepts: Apple's, with `privacy:`, `align:` and
/// `format:` arguments.
public struct OSLogInterpolation: StringInterpolationProtocol {
    /// Each part renders its text when the message is logged (never when its level is off).
    var parts: [() -> String] = []

    /// An empty interpolation (the compiler creates it for a message literal).
    public init(literalCapacity: Int, interpolationCount: Int) {
        parts.reserveCapacity(interpolationCount * 2 + 1)
    }

    /// Literal text of the message: always shown.
    public mutating func appendLiteral(_ literal: String) {
        guard !literal.isEmpty else { return }
        parts.append { literal }
    }

    /// A string: private unless `privacy` says otherwise.
    public mutating func appendInterpolation(
        _ argumentString: @autoclosure @escaping () -> String, align: OSLogStringAlignment = .none,
        privacy: OSLogPrivacy = .auto
    ) {
        parts.append { Redaction.apply(privacy, isScalar: false, argumentString, align: align) }
    }

    /// A value described by `description`: private unless `privacy` says otherwise.
    public mutating func appendInterpolation<T: CustomStringConvertible>(
        _ value: @autoclosure @escaping () -> T, align: OSLogStringAlignment = .none, privacy: OSLogPrivacy = .auto
    ) {
        // Numbers written as `\(x, privacy: …)` without `format:` come here: still scalars.
        let isScalar = T.self is any Numeric.Type || T.self == Bool.self
        parts.append { Redaction.apply(privacy, isScalar: isScalar, { value().description }, align: align) }
    }

    /// An error, by `String(describing:)`: private unless `privacy` says otherwise.
    public mutating func appendInterpolation<E: Error>(
        _ error: @autoclosure @escaping () -> E, align: OSLogStringAlignment = .none, privacy: OSLogPrivacy = .auto
    ) {
        parts.append { Redaction.apply(privacy, isScalar: false, { String(describing: error()) }, align: align) }
    }

    /// An error that describes itself: as the two forms above.
    public mutating func appendInterpolation<E: Error & CustomStringConvertible>(
        _ error: @autoclosure @escaping () -> E, align: OSLogStringAlignment = .none, privacy: OSLogPrivacy = .auto
    ) {
        parts.append { Redaction.apply(privacy, isScalar: false, { error().description }, align: align) }
    }

    /// A type's name: public unless `privacy` says otherwise (as Apple shows metatypes).
    public mutating func appendInterpolation(
        _ value: @autoclosure @escaping () -> Any.Type, align: OSLogStringAlignment = .none,
        privacy: OSLogPrivacy = .auto
    ) {
        parts.append { Redaction.apply(privacy, isScalar: true, { String(describing: value()) }, align: align) }
    }

    /// An integer in `format`: public unless `privacy` says otherwise.
    public mutating func appendInterpolation<T: FixedWidthInteger>(
        _ number: @autoclosure @escaping () -> T, format: OSLogIntegerFormatting = .decimal,
        align: OSLogStringAlignment = .none, privacy: OSLogPrivacy = .auto
    ) {
        parts.append { Redaction.apply(privacy, isScalar: true, { format.format(number()) }, align: align) }
    }

    /// A `Double` in `format`: public unless `privacy` says otherwise.
    public mutating func appendInterpolation(
        _ number: @autoclosure @escaping () -> Double, format: OSLogFloatFormatting = .fixed,
        align: OSLogStringAlignment = .none, privacy: OSLogPrivacy = .auto
    ) {
        parts.append { Redaction.apply(privacy, isScalar: true, { format.format(number()) }, align: align) }
    }

    /// A `Float` in `format`: public unless `privacy` says otherwise.
    public mutating func appendInterpolation(
        _ number: @autoclosure @escaping () -> Float, format: OSLogFloatFormatting = .fixed,
        align: OSLogStringAlignment = .none, privacy: OSLogPrivacy = .auto
    ) {
        parts.append { Redaction.apply(privacy, isScalar: true, { format.format(Double(number())) }, align: align) }
    }

    /// A `Bool` in `format`: public unless `privacy` says otherwise.
    public mutating func appendInterpolation(
        _ boolean: @autoclosure @escaping () -> Bool, format: OSLogBoolFormat = .truth, privacy: OSLogPrivacy = .auto
    ) {
        parts.append { Redaction.apply(privacy, isScalar: true, { format.format(boolean()) }, align: .none) }
    }
}

/// Apple's release-build redaction of private values (see ``Logger``).
enum Redaction {
    /// `BA_LOG_PRIVATE_DATA=1`: show private values (development only).
    static let showsPrivateData = ProcessInfo.processInfo.environment["BA_LOG_PRIVATE_DATA"] == "1"

    static func apply(
        _ privacy: OSLogPrivacy, isScalar: Bool, _ value: () -> String, align: OSLogStringAlignment
    ) -> String {
        // Sensitive values stay hidden even with private data shown, as on Apple's systems.
        let hidden: Bool =
            switch privacy.kind {
            case .public: false
            case .sensitive: true
            case .private: !showsPrivateData
            case .auto: !isScalar && !showsPrivateData
            }
        guard hidden else { return align.apply(value()) }
        if privacy.mask == .hash { return "<mask.hash: '\(hash(value()))'>" }
        return "<private>"
    }

    /// A random salt per process (Apple salts per boot), so a hash of a short value cannot be
    /// looked up in a table made beforehand.
    static let salt = UInt64.random(in: .min ... .max)

    /// FNV-1a of the salt and the UTF-8 bytes, base64: within one process equal values log equal
    /// hashes, and the value is not shown.
    static func hash(_ value: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in withUnsafeBytes(of: salt, Array.init) + Array(value.utf8) {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return withUnsafeBytes(of: hash.bigEndian) { Data($0).base64EncodedString() }
    }
}
