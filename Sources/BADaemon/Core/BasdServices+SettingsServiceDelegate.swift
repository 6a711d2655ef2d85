import BASettings

// A settings edit: the engine gets the new concurrency bound, and held-back events may go (a
// switch turned back on, or Low Power Mode); what waits for a metered network or the battery follows
// the settings.
extension BasdServices: SettingsServiceDelegate {
    func settingsService(_ service: SettingsService, loaded settings: BasdSettings) {
        transfers.setBackgroundConcurrency(settings.backgroundDownloadConcurrency)
        // `lowPowerModeOnBattery` may have changed (Low Power Mode then tells the transfers).
        scheduler.checkLowPowerMode()
        // `waitOnMeteredNetwork` may have changed.
        transfers.applyHolds()
        delivery.schedulerTick()
    }
}
