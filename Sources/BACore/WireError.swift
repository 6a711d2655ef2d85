/// Why bytes from the other side of the runner socket could not be read.
///
/// Every malformed input becomes one of these: the reader never traps on what it is sent.
package struct WireError: Error, Equatable, CustomStringConvertible, Sendable {
    /// What went wrong, e.g. "frame of 9000000 bytes exceeds the 4194304-byte limit".
    package var reason: String

    package init(_ reason: String) { self.reason = reason }

    package var description: String { reason }
}
