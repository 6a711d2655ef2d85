/// Why basd's settings file could not be used.
///
/// The ``description`` starts with the file's path and, for a problem with one key, names it:
///
/// ```
/// /home/u/.local/share/background-assets/config.json: quarantineThreshold must be an integer, found a string
/// ```
///
/// Codes can grow without breaking callers; switch on ``code`` with a `default`.
public struct SettingsError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The kind of problem.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name, e.g. `"unknownKey"`.
        public let rawValue: String
        /// A code from its name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The file exists but cannot be read (permissions, a directory, too large).
        public static let unreadable = Code(rawValue: "unreadable")
        /// The file is not JSON, or its top level is not an object.
        public static let malformedJSON = Code(rawValue: "malformedJSON")
        /// A key this basd does not know (often a typo).
        public static let unknownKey = Code(rawValue: "unknownKey")
        /// A key holds a value of the wrong JSON type.
        public static let wrongType = Code(rawValue: "wrongType")
        /// A key has the right type but a value the rules refuse (negative, zero where that makes
        /// no sense, a minimum above a maximum).
        public static let invalidValue = Code(rawValue: "invalidValue")
        /// The code's name.
        public var description: String { rawValue }
    }

    /// The kind of problem.
    public var code: Code
    /// The settings file's path.
    public var path: String
    /// The key at fault, if the problem is with one key.
    public var key: String?
    /// What is wrong and, where it helps, how to fix it; without the path.
    public var message: String

    /// Creates an error; `message` should not repeat `path`, which ``description`` adds.
    public init(_ code: Code, path: String, key: String? = nil, message: String) {
        self.code = code
        self.path = path
        self.key = key
        self.message = message
    }

    /// `"<path>: <message>"`.
    public var description: String { "\(path): \(message)" }
}
