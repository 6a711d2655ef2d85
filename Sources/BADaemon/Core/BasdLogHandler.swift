import Foundation
import Logging

/// basd's swift-log handler: one line per entry on standard error, as ``LogFormat`` says (a
/// syslog priority prefix from the entry's level for the journal, the time otherwise).
struct BasdLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    let format: LogFormat

    init(level: Logger.Level, format: LogFormat = .standardError) {
        self.logLevel = level
        self.format = format
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let line = format.line(event.message.description, at: Date(), priority: Self.priority(of: event.level))
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// The syslog priority of a level (journald's `PRIORITY`).
    static func priority(of level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}
