import BAScheduling

/// The owner of basd's settings file (`STATE_DIR/config.json`): read at start, re-read by the
/// scheduler's tick when it changed; a bad edit is logged and the last good settings stay.
final class SettingsService: @unchecked Sendable {
    private unowned let services: BasdServices
    private var file: SettingsFile

    init(_ services: BasdServices, file: SettingsFile) {
        self.services = services
        self.file = file
    }

    /// The settings in force.
    var current: BasdSettings { file.settings }

    /// Re-reads the file if it changed and tells the engine a new concurrency bound.
    func refresh() {
        switch file.check() {
        case .unchanged:
            break
        case .loaded:
            services.log("settings: \(file.path) loaded")
            services.transfers.setBackgroundConcurrency(file.settings.backgroundDownloadConcurrency)
        case .rejected(let error):
            services.log("settings: ignoring the edit of \(file.path), keeping the last good ones: \(error)")
        }
    }
}
