/// Why an app directory could not be loaded as an ``AppBundle``.
///
/// The ``description`` always starts with the `Info.plist` path, and for a problem with one key it
/// names the key, what was expected and what was found:
///
/// ```
/// /apps/game/Info.plist: BAAppGroupID must be a string, found an integer
/// ```
///
/// Codes can grow without breaking callers; switch on ``code`` with a `default`.
package struct AppBundleError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The kind of problem.
    package struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        /// The directory has no `Info.plist` (or the directory does not exist).
        package static let missingInfoPlist = Code(rawValue: "missingInfoPlist")
        /// The `Info.plist` could not be read, is not a property list (XML or binary), is too large,
        /// or its top level is not a dictionary.
        package static let malformedInfoPlist = Code(rawValue: "malformedInfoPlist")
        /// A required key is absent.
        package static let missingKey = Code(rawValue: "missingKey")
        /// A key holds a value of the wrong property-list type (a number where a string belongs, …).
        package static let wrongType = Code(rawValue: "wrongType")
        /// A key has the right type but a value the rules refuse (a bad identifier, a negative size,
        /// a URL that is not https, an extension path that leaves the app directory, …).
        package static let invalidValue = Code(rawValue: "invalidValue")
        package var description: String { rawValue }
    }

    /// The kind of problem.
    package var code: Code
    /// The `Info.plist` path the problem is in (absolute).
    package var path: String
    /// The key at fault, if the problem is with one key; nested keys are written with a dot
    /// (`BAInitialDownloadRestrictions.BADownloadAllowance`).
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
