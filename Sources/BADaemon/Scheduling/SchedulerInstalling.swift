import BADaemonProtocol
import BAStore

/// What the ``PeriodicScheduler`` has the installer do (``AppInstaller`` conforms): periodic
/// content-request calls and the uninstall of an app whose directory is gone. A test gives the
/// scheduler a fake. Executor only.
protocol SchedulerInstalling: AnyObject {
    /// Removes the app `bundleIdentifier` (see ``AppInstaller/uninstall(_:keepData:why:reply:)``).
    func uninstall(
        _ bundleIdentifier: String, keepData: Bool, why: String,
        reply: @escaping @Sendable (ServerMessage.Result) -> Void)

    /// Makes a `downloads(for:)` call of `app`'s extension through its slot; `done` gets the report.
    func callContentRequest(
        _ kind: ContentRequestKind, of app: StoredApp, bypassAllowance: Bool, report: ExtensionRunReport,
        done: @escaping @Sendable (ExtensionRunReport) -> Void)

    /// The app's content request whose manifest fetch failed and waits to be tried again, said
    /// for `ba apps`, or nil.
    func manifestRetrySummary(of app: String) -> String?
}

extension AppInstaller: SchedulerInstalling {
    func manifestRetrySummary(of app: String) -> String? { manifestRetries[app]?.summary }
}
