/// The level of a log message, as Apple's `OSLogType`.
///
/// Each type goes to swift-log at a level of its own (``Logger`` documents the mapping), so a
/// message reaches journald or stderr with its level.
public struct OSLogType: Equatable, Hashable, RawRepresentable, Sendable {
    /// Apple's raw value (`OS_LOG_TYPE_DEFAULT` 0, `INFO` 1, `DEBUG` 2, `ERROR` 0x10, `FAULT` 0x11).
    public let rawValue: UInt8

    /// A type with Apple's raw value.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The same as ``init(rawValue:)``.
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    /// Default: swift-log `notice`.
    public static let `default` = OSLogType(rawValue: 0x00)
    /// Info: swift-log `info`.
    public static let info = OSLogType(rawValue: 0x01)
    /// Debug: swift-log `debug` (not shown by swift-log's default handler, as Apple does not
    /// keep debug messages by default).
    public static let debug = OSLogType(rawValue: 0x02)
    /// Error: swift-log `error`.
    public static let error = OSLogType(rawValue: 0x10)
    /// Fault: swift-log `critical`.
    public static let fault = OSLogType(rawValue: 0x11)
}
