import BASettings

// A settings edit: the engine gets the new concurrency bound, and held-back events may go (a
// switch turned back on, or Low Power Mode); what waits for a metered network follows the setting.
extension BasdServices: SettingsServiceDelegate {
    func settingsService(_ service: SettingsService, loaded settings: BasdSettings) {
        transfers.setBackgroundConcurrency(settings.backgroundDownloadConcurrency)
        // `waitOnMeteredNetwork` may have changed.
        transfers.applyHolds()
        delivery.schedulerTick()
    }
}
