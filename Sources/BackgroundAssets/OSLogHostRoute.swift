/// Not for direct use: how the `os` module's `Logger` writes to the host's log during an extension
/// call, so that Apple-style log lines reach `ba run-extension`'s report and basd's log with their
/// level. The `os` module finds this C symbol at run time (it does not depend on this module).
///
/// - Parameters:
///   - level: A ``BAHostLogLevel`` raw value.
///   - message: The line, NUL-terminated UTF-8.
/// - Returns: True when an extension call is active and the line went to its host; false
///   otherwise (the caller logs it itself).
@_cdecl("ba_os_log_to_host")
public func _baOSLogToHost(_ level: Int32, _ message: UnsafePointer<CChar>) -> Bool {
    guard let connection = ExtensionHostConnection.active else { return false }
    connection.log(level, String(cString: message))
    return true
}
