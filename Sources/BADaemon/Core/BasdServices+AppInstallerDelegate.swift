import BADaemonProtocol
import BAStore

// The installer's questions and reports: the scheduler keeps the call gates and the periodic runs;
// the launcher hears of registrations and uninstalls.
extension BasdServices: AppInstallerDelegate {
    func installer(
        _ installer: AppInstaller, refusalToCall app: StoredApp, kind: ContentRequestKind?, bypassAllowance: Bool
    ) -> String? {
        scheduler.refusalToCall(app, kind: kind, bypassAllowance: bypassAllowance)
    }

    func installer(_ installer: AppInstaller, periodicRanFor app: String) {
        scheduler.periodicRan(app)
    }

    func installer(_ installer: AppInstaller, registered app: String) {
        scheduler.wake()
        // An update may name another desktop entry (`BADesktopEntry`).
        launcher?.appChanged(app)
    }

    func installer(_ installer: AppInstaller, uninstalled app: String) {
        // Its transfers were dropped without ending: the launcher entry is cleared, not left showing.
        launcher?.appGone(app)
    }
}
