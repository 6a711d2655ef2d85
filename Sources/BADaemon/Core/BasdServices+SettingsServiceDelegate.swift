import BASettings

// A settings edit: the engine gets the new concurrency bound, and held-back events may go (a
// switch turned back on, or Low Power Mode).
extension BasdServices: SettingsServiceDelegate {
    func settingsService(_ service: SettingsService, loaded settings: BasdSettings) {
        transfers.setBackgroundConcurrency(settings.backgroundDownloadConcurrency)
        delivery.schedulerTick()
    }
}
