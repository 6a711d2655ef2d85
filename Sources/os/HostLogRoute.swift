internal import CBAOSLog

/// During an extension call, log lines go to the host's log (BackgroundAssets'
/// `ba_os_log_to_host`), which shows them in `ba run-extension`'s report and writes them to basd's
/// log with their level; the extension's own stderr reaches neither. The entry is found at run
/// time (`ba_os_log_find_host`), so `os` does not depend on BackgroundAssets.
enum HostLogRoute {
    static let function: ba_os_log_to_host_fn? = ba_os_log_find_host()

    /// Sends `line` to the host's log at `level` (`BAHostLogLevel`); false when no extension call
    /// is active (or BackgroundAssets is not loaded).
    static func send(_ level: Int32, _ line: String) -> Bool {
        guard let function else { return false }
        return line.withCString { function(level, $0) }
    }
}
