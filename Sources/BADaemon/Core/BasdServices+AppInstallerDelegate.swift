import BADaemonProtocol
import BAStore

// The installer's questions and reports: the scheduler keeps the call gates and the periodic runs.
extension BasdServices: AppInstallerDelegate {
    func installer(
        _ installer: AppInstaller, refusalToCall app: StoredApp, kind: ContentRequestKind?, bypassAllowance: Bool
    ) -> String? {
        scheduler.refusalToCall(app, kind: kind, bypassAllowance: bypassAllowance)
    }

    func installer(_ installer: AppInstaller, periodicRanFor app: String) {
        scheduler.periodicRan(app)
    }

    func installerRegisteredApp(_ installer: AppInstaller) {
        scheduler.wake()
    }
}
