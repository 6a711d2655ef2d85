import BADaemonProtocol
import BAStore

/// What the ``AppInstaller`` asks of and reports to the scheduler above it (``BasdServices`` is
/// the delegate and hands each to the ``PeriodicScheduler``), so the installer does not call the
/// scheduler that drives it. Called on the executor.
protocol AppInstallerDelegate: AnyObject {
    /// Why the extension of `app` may not be called now for `kind`, or nil.
    func installer(
        _ installer: AppInstaller, refusalToCall app: StoredApp, kind: ContentRequestKind?, bypassAllowance: Bool
    ) -> String?

    /// A periodic run of the app (a simulated one) ended: the next is one interval from now.
    func installer(_ installer: AppInstaller, periodicRanFor app: String)

    /// An app was registered or updated: what is due may have changed.
    func installer(_ installer: AppInstaller, registered app: String)

    /// An app was uninstalled (its downloads dropped, its row gone).
    func installer(_ installer: AppInstaller, uninstalled app: String)
}
