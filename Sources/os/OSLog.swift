import Foundation
package import Logging

/// A log object, as Apple's `OSLog`: a subsystem and a category, for ``os_log(_:dso:log:type:_:)``
/// and ``Logger/init(_:)``.
///
/// On Linux its messages go to swift-log: the logger's label is the subsystem (`default` when
/// empty) and each message carries the category as the metadata value `category`. Configure
/// where they go with `LoggingSystem.bootstrap` (swift-log's default writes them to stderr, which
/// journald keeps for a service, from `info` up).
///
/// ```swift
/// let log = OSLog(subsystem: "com.example.game", category: "assets")
/// os_log("loaded %{public}@ in %d ms", log: log, type: .info, name, milliseconds)
/// ```
public final class OSLog: NSObject, @unchecked Sendable {
    /// The subsystem (reverse-DNS, e.g. `com.example.game`).
    public let subsystem: String
    /// The category within the subsystem.
    public let category: String
    /// Where the messages go; nil for ``disabled``.
    let backend: Logging.Logger?
    /// Whether lines go to the host's log during an extension call (not with a handler of one's own).
    let routesToHost: Bool

    /// A log for `subsystem` and `category`.
    public init(subsystem: String, category: String) {
        self.subsystem = subsystem
        self.category = category
        self.backend = Self.makeBackend(subsystem: subsystem, category: category, handler: nil)
        self.routesToHost = true
    }

    /// A log for `subsystem` and one of Apple's special categories (here only its name differs).
    public convenience init(subsystem: String, category: Category) {
        self.init(subsystem: subsystem, category: category.rawValue)
    }

    /// A log whose messages go to `handler` (tests, and hosts that route logs themselves).
    package init(subsystem: String, category: String, handler: any LogHandler) {
        self.subsystem = subsystem
        self.category = category
        self.backend = Self.makeBackend(subsystem: subsystem, category: category, handler: handler)
        self.routesToHost = false
    }

    private init(disabled: ()) {
        subsystem = ""
        category = ""
        backend = nil
        routesToHost = false
    }

    /// The log of messages without a log object.
    public static let `default` = OSLog(subsystem: "", category: "")

    /// A log that drops everything.
    public static let disabled = OSLog(disabled: ())

    /// Whether a message of `type` is kept: its swift-log level is at or above the handler's.
    public func isEnabled(type: OSLogType) -> Bool {
        guard let backend else { return false }
        return backend.logLevel <= Self.level(of: type)
    }

    /// Whether signposts are recorded: never here (``OSSignposter`` is a no-op on Linux).
    public var signpostsEnabled: Bool { false }

    /// Apple's special categories.
    public struct Category: RawRepresentable, Sendable {
        /// The category's name.
        public let rawValue: String
        /// The category named `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Signposts for Instruments' Points of Interest.
        public static let pointsOfInterest = Category(rawValue: "PointsOfInterest")
        /// Signposts recorded only while a tool traces the process.
        public static let dynamicTracing = Category(rawValue: "DynamicTracing")
        /// Signposts with backtraces, recorded only while a tool traces the process.
        public static let dynamicStackTracing = Category(rawValue: "DynamicStackTracing")
    }

    static func makeBackend(subsystem: String, category: String, handler: (any LogHandler)?) -> Logging.Logger {
        let label = subsystem.isEmpty ? "default" : subsystem
        var logger: Logging.Logger
        if let handler {
            logger = Logging.Logger(label: label, factory: { _ in handler })
        } else {
            logger = Logging.Logger(label: label)
        }
        if !category.isEmpty { logger[metadataKey: "category"] = .string(category) }
        return logger
    }

    /// The swift-log level a message of `type` is logged at.
    static func level(of type: OSLogType) -> Logging.Logger.Level {
        switch type {
        case .debug: .debug
        case .info: .info
        case .error: .error
        case .fault: .critical
        default: .notice
        }
    }

    /// Logs `message` at `level`; the message is built only when the level is enabled. During an
    /// extension call the line goes to the host's log instead (``HostLogRoute``).
    func emit(
        _ level: Logging.Logger.Level, _ message: @autoclosure () -> String, file: String, function: String,
        line: UInt
    ) {
        guard let backend, backend.logLevel <= level else { return }
        let text = message()
        if routesToHost {
            let label = (subsystem.isEmpty ? "default" : subsystem) + (category.isEmpty ? "" : "[\(category)]")
            if HostLogRoute.send(Self.hostLevel(level), label + ": " + text) { return }
        }
        backend.log(
            level: level, Logging.Logger.Message(stringLiteral: text), file: file, function: function, line: line)
    }

    /// The host log's level (`BAHostLogLevel`: debug 0, info 1, notice 2, error 3) of a swift-log level.
    static func hostLevel(_ level: Logging.Logger.Level) -> Int32 {
        switch level {
        case .trace, .debug: 0
        case .info: 1
        case .notice: 2
        case .warning, .error, .critical: 3
        }
    }
}
