import Foundation

extension DaemonServer {
    /// Whether a log line reports a failure (`--log-level warning` keeps only those; the journal
    /// gets them at priority 4).
    package static func isWarning(_ line: String) -> Bool { LogFormat.priority(of: line) == 4 }

    /// Where basd's settings are: `$XDG_CONFIG_HOME/background-assets/config.json` (default
    /// `~/.config/background-assets/config.json`), unless a `config.json` is still in the state
    /// folder, the place older basds read: that one is read, with a notice to move it.
    static func settingsPath(
        stateDirectory: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        log: @Sendable (String) -> Void
    ) -> String {
        let old = (stateDirectory as NSString).appendingPathComponent("config.json")
        let preferred = defaultSettingsPath(environment: environment)
        if old != preferred, FileManager.default.fileExists(atPath: old) {
            log("settings: reading \(old), the old place; move it to \(preferred)")
            return old
        }
        return preferred
    }

    /// `$XDG_CONFIG_HOME/background-assets/config.json`, `$HOME/.config/…` without it.
    package static func defaultSettingsPath(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String {
        var base = environment["XDG_CONFIG_HOME"] ?? ""
        if !base.hasPrefix("/") {
            let home = environment["HOME"] ?? NSHomeDirectory()
            base = (home as NSString).appendingPathComponent(".config")
        }
        return (base as NSString).appendingPathComponent("background-assets/config.json")
    }
}
