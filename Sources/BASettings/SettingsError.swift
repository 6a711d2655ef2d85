/// Why basd's settings file could not be used.
///
/// The ``description`` starts with the file's path and, for a problem with one key, names it:
///
/// ```
/// /home/u/.local/share/background-assets/config.json: quarantineThreshold must be an integer, found a string
/// ```
///
/// Codes can grow without breaking callers; switch on ``code`` with a `default`.
package struct SettingsError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The kind of problem.
    package struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name, e.g. `"unknownKey"`.
        package let rawValue: String
        /// A code from its name.
        package init(rawValue: String) { self.rawValue = rawValue }
        /// The file exists but cannot be read (permissions, a directory, too large).
        package static let unreadable = Code(rawValue: "unreadable")
        /// The file is not JSON, or its top level is not an object.
        package static let malformedJSON = Code(rawValue: "malformedJSON")
        /// A key this basd does not know (often a typo).
        package static let unknownKey = Code(rawValue: "unknownKey")
        /// A key holds a value of the wrong JSON type.
        package static let wrongType = Code(rawValue: "wrongType")
        /// A key has the right type but a value the rules refuse (negative, zero where that makes
        /// no sense, a minimum above a maximum).
        package static let invalidValue = Code(rawValue: "invalidValue")
        /// The code's name.
        package var description: String { rawValue }
    }

    /// The kind of problem.
    package var code: Code
    /// The settings file's path.
    package var path: String
    /// The key at fault, if the problem is with one key.
    package var key: String?
    /// What is wrong and, where it helps, how to fix it; without the path.
    package var message: String

    /// Creates an error; `message` should not repeat `path`, which ``description`` adds.
    package init(_ code: Code, path: String, key: String? = nil, message: String) {
        self.code = code
        self.path = path
        self.key = key
        self.message = message
    }

    /// `"<path>: <message>"`.
    package var description: String { "\(path): \(message)" }
}
