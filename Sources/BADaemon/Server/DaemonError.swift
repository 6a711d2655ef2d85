/// Why basd could not start (or stop cleanly).
package struct DaemonError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    package enum Code: Sendable, Hashable {
        /// Another basd holds the state directory's lock.
        case alreadyRunning
        /// A directory could not be created or is not safe to use.
        case directory
        /// The socket could not be set up (a non-socket file in the way, a path too long, bind failed).
        case socket
        /// The state store could not be opened.
        case store
        /// The lock file could not be opened or locked.
        case lock
        /// The settings file (`STATE_DIR/config.json`) is malformed; the message names the key.
        case settings
    }

    /// What went wrong.
    package var code: Code
    /// What happened and how to fix it.
    package var message: String
    /// The underlying error, if any.
    package var cause: (any Error & Sendable)?

    /// Creates an error.
    package init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    package var description: String {
        guard let cause else { return message }
        return "\(message) (\(cause))"
    }
}
