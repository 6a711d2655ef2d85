/// A D-Bus call that failed: what basd tried, the errno or D-Bus error name, and its message.
package struct DesktopBusError: Error, Sendable, CustomStringConvertible {
    /// What basd was doing ("connecting to the session bus at unix:path=…").
    package var operation: String
    /// The negative errno sd-bus returned, or 0 for an error reply.
    package var errno: Int32
    /// The D-Bus error name of an error reply (`org.freedesktop.DBus.Error.ServiceUnknown`), if any.
    package var name: String?
    package var message: String

    package init(_ operation: String, errno: Int32 = 0, name: String? = nil, message: String) {
        self.operation = operation
        self.errno = errno
        self.name = name
        self.message = message
    }

    package var description: String {
        "\(operation): \(name.map { "\($0): " } ?? "")\(message)"
    }
}
