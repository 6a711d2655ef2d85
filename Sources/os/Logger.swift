package import Logging

/// Apple's `Logger` (`import os`), over swift-log, so that Apple's logging code compiles unchanged.
///
/// ```swift
/// import os
///
/// extension Logger {
///     static let downloads = Logger(subsystem: "com.example.game", category: "downloads")
/// }
///
/// Logger.downloads.info("finished \(download.identifier, privacy: .public) at \(url.path)")
/// // info com.example.game: category=downloads finished level-1 at <private>
/// ```
///
/// Messages go to swift-log (configure it with `LoggingSystem.bootstrap`; its default writes to
/// stderr, which journald keeps for a service, from `info` up). The label is the subsystem, the
/// category is the metadata value `category`, and the level is:
///
/// | Apple | swift-log |
/// |---|---|
/// | `trace`, `debug`, `log(level: .debug, …)` | `debug` |
/// | `info`, `log(level: .info, …)` | `info` |
/// | `notice`, `log`, `log(level: .default, …)` | `notice` |
/// | `warning` | `warning` (Apple logs it at its error level) |
/// | `error`, `log(level: .error, …)` | `error` |
/// | `critical`, `fault`, `log(level: .fault, …)` | `critical` |
///
/// Interpolated values follow Apple's privacy rules for a release build: `privacy: .public` is
/// shown; `.private` and `.sensitive` are replaced by `<private>` (with `mask: .hash`, by
/// `<mask.hash: '…'>`, a hash of the value); `.auto`, the default, shows numbers and booleans and
/// hides strings and other values. Set `BA_LOG_PRIVATE_DATA=1` in the environment to show private
/// (not sensitive) values while developing (Apple's "Enable-Private-Data").
public struct Logger: Sendable {
    let handle: OSLog

    /// A logger for `subsystem` (reverse-DNS, e.g. `com.example.game`) and `category`.
    public init(subsystem: String, category: String) {
        handle = OSLog(subsystem: subsystem, category: category)
    }

    /// A logger without subsystem or category (swift-log label `default`).
    public init() {
        handle = .default
    }

    /// A logger for the subsystem and category of `logObj`.
    public init(_ logObj: OSLog) {
        handle = logObj
    }

    /// A logger whose messages go to `handler` (tests, and hosts that route logs themselves).
    package init(subsystem: String, category: String, handler: any LogHandler) {
        handle = OSLog(subsystem: subsystem, category: category, handler: handler)
    }

    /// Logs `message` at the default level (swift-log `notice`).
    public func log(
        _ message: OSLogMessage, file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        handle.emit(.notice, message.rendered, file: file, function: function, line: line)
    }

    /// Logs `message` at `level`.
    public func log(
        level: OSLogType, _ message: OSLogMessage, file: String = #fileID, function: String = #function,
        line: UInt = #line
    ) {
        handle.emit(OSLog.level(of: level), message.rendered, file: file, function: function, line: line)
    }

    /// Logs `message` at the debug level (Apple: "trace" is debug).
    public func trace(
        _ message: OSLogMessage, file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        handle.emit(.debug, message.rendered, file: file, function: function, line: line)
    }

    /// Logs `message` at the debug level.
    public func debug(
        _ message: OSLogMessage, file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        handle.emit(.debug, message.rendered, file: file, function: function, line: line)
    }

    /// Logs `message` at the info level.
    public func info(
        _ message: OSLogMessage, file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        handle.emit(.info, message.rendered, file: file, function: function, line: line)
    }

    /// Logs `message` at the notice (default) level.
    public func notice(
        _ message: OSLogMessage, file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        handle.emit(.notice, message.rendered, file: file, function: function, line: line)
    }

    /// Logs `message` at swift-log's warning level (Apple logs it as an error).
    public func warning(
        _ message: OSLogMessage, file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        handle.emit(.warning, message.rendered, file: file, function: function, line: line)
    }

    /// Logs `message` at the error level.
    public func error(
        _ message: OSLogMessage, file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        handle.emit(.error, message.rendered, file: file, function: function, line: line)
    }

    /// Logs `message` at the critical level (Apple: "critical" is a fault).
    public func critical(
        _ message: OSLogMessage, file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        handle.emit(.critical, message.rendered, file: file, function: function, line: line)
    }

    /// Logs `message` as a fault (swift-log `critical`).
    public func fault(
        _ message: OSLogMessage, file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        handle.emit(.critical, message.rendered, file: file, function: function, line: line)
    }
}
