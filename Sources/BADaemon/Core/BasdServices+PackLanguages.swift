import BADaemonProtocol
import BAStore

// The pack service's word that an app's localized packs changed language: its extension is told
// (`BAContentRequest.languageChange`, `BA_CONTENT_REQUEST_LANGUAGE_CHANGE`).
extension BasdServices {
    /// Calls the app's extension's `downloads(for: .languageChange, …)` in its extension slot,
    /// within its daily runtime allowance as a periodic run; an app without an extension is not
    /// called. The run is recorded (`extension_run`, event `languageChange`).
    func packs(_ service: PackService, languageChangedFor app: StoredApp) {
        guard app.extensionPath != nil else { return }
        let report = ExtensionRunReport(bundleIdentifier: app.bundleIdentifier, version: app.version)
        installer.callContentRequest(.languageChange, of: app, bypassAllowance: false, report: report) {
            [self] report in
            log(
                "\(app.bundleIdentifier): its extension was told of the language change (\(report.event ?? report.skipped ?? "not run"))"
            )
        }
    }
}
