import Foundation

/// How basd's log lines start: for the journal, a syslog priority prefix (`<6>`, `<4>`) that
/// journald turns into the entry's priority (`journalctl -p warning`), since the journal adds the
/// time itself; elsewhere (a terminal, a file), the UTC time with milliseconds.
///
/// ```
/// <6>basd: registered com.example.game 1.0                                   (journal)
/// 2026-11-25T11:40:02.118Z basd: registered com.example.game 1.0              (elsewhere)
/// ```
enum LogFormat: Sendable, Equatable {
    case journal
    case timestamped

    /// The format for this process's standard error: the journal when `$JOURNAL_STREAM`
    /// (`DEVICE:INODE`, set by systemd) names the file standard error is.
    static let standardError: LogFormat =
        isJournal(ProcessInfo.processInfo.environment["JOURNAL_STREAM"]) ? .journal : .timestamped

    /// Whether `stream` (`$JOURNAL_STREAM`) names the file open at `fd`.
    static func isJournal(_ stream: String?, fd: Int32 = STDERR_FILENO) -> Bool {
        guard let stream else { return false }
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    /// The priority of a line: warning (4) for one that reports a failure, else info (6).
    static func priority(of text: String) -> Int {
        let lowered = text.lowercased()
        let failure = ["failed", "cannot", "could not", "refused", "quarantined", "not usable", "gave up"]
        return failure.contains { lowered.contains($0) } ? 4 : 6
    }

    /// The line as written, without its newline; `priority` defaults to the text's.
    func line(_ text: String, at date: Date, priority: Int? = nil) -> String {
        switch self {
        case .journal: return "<\(priority ?? Self.priority(of: text))>basd: \(text)"
        case .timestamped: return Self.timestamp(date) + " basd: " + text
        }
    }

    /// `2026-11-25T11:40:02.118Z`.
    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        let milliseconds = min(999, Int(((date.timeIntervalSince1970 - Double(seconds)) * 1000).rounded()))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), milliseconds)
    }
}
