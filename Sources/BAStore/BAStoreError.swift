/// Why a ``BAStore`` operation failed, with a message that says what to do about it.
///
/// Every operation of the store throws only this type. Codes can grow without breaking callers;
/// switch with a `default`. When an operation throws, nothing of it was committed.
package struct BAStoreError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    package struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }

        /// The app already has an active download (created, waiting or downloading) with this
        /// identifier, or this unique identifier is already stored. Upstream: Apple's code 100.
        package static let duplicateIdentifier = Code(rawValue: "duplicateIdentifier")
        /// The app has no active download with this identifier. Upstream: Apple's code 101.
        package static let notScheduled = Code(rawValue: "notScheduled")
        /// No download has this unique identifier.
        package static let unknownDownload = Code(rawValue: "unknownDownload")
        /// No app is registered with this bundle identifier.
        package static let unknownApp = Code(rawValue: "unknownApp")
        /// The download has already ended (finished or failed); it can change no more.
        package static let downloadEnded = Code(rawValue: "downloadEnded")
        /// A value given to the store breaks its rules (an ended state passed to `schedule`, …).
        package static let invalidArgument = Code(rawValue: "invalidArgument")
        /// The database was written by a newer version of this software; this one refuses to
        /// touch it rather than misread it.
        package static let schemaTooNew = Code(rawValue: "schemaTooNew")
        /// The file fails SQLite's `quick_check` (a damaged page, a broken index): the message
        /// says what SQLite found and how to restore, recover or start over.
        package static let corrupt = Code(rawValue: "corrupt")
        /// The file holds no apps and no history while files it should know about exist (basd:
        /// app group containers): most likely a copy made without its `-wal` file. Refused, so that
        /// nothing is silently forgotten; the message says how to put the state back or start over.
        package static let stateLost = Code(rawValue: "stateLost")
        /// SQLite failed: the file cannot be opened or created, is not a database, is corrupt, the
        /// disk is full, … ``BAStoreError/cause`` holds SQLite's error.
        package static let database = Code(rawValue: "database")

        package var description: String { rawValue }
    }

    /// What kind of failure this is.
    package var code: Code
    /// What happened and how to fix it, for a person.
    package var message: String
    /// The underlying error (SQLite's, as GRDB reports it), if any.
    package var cause: (any Error)?
    /// The database file the failure concerns.
    package var path: String

    /// Creates an error.
    package init(_ code: Code, _ message: String, path: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.cause = cause
    }

    package var description: String {
        var text = "\(code): \(message) (database \(path))"
        if let cause { text += ": \(cause)" }
        return text
    }
}
