import BAScheduling
import BASettings
import Foundation

/// The owner of basd's settings file (`$XDG_CONFIG_HOME/background-assets/config.json`, or the
/// old `STATE_DIR/config.json`): read at start, re-read at once when its folder changes (inotify)
/// and by the scheduler's tick; a bad edit is logged and the last good settings stay.
final class SettingsService: @unchecked Sendable {
    private unowned let services: BasdServices
    private var file: SettingsFile
    private var watcher: DescriptorWatcher?

    init(_ services: BasdServices, file: SettingsFile) {
        self.services = services
        self.file = file
    }

    /// The settings in force.
    var current: BasdSettings { file.settings }

    /// Starts watching the settings file's folder (call once, at start).
    func watch() {
        let directory = (file.path as NSString).deletingLastPathComponent
        do {
            // Weak: the watcher's thread may outlive basd's services (an in-process test).
            watcher = try SettingsWatcher.start(directory: directory, executor: services.executor) { [weak self] in
                self?.refresh(because: .folderChanged)
            }
        } catch {
            services.log("settings: not watching \(directory) (\(error)); edits apply at the next scheduler tick")
        }
    }

    func stop() { watcher?.stop() }

    deinit { watcher?.stop() }

    /// What made basd look at the settings file again (said in the log line of a reload).
    enum RefreshCause: String {
        /// The watch of its folder (inotify): an edit applies at once.
        case folderChanged = "the folder changed"
        /// The scheduler's periodic look (where the folder is not watched).
        case schedulerLook = "the scheduler's look"
    }

    /// Re-reads the file if it changed and tells the engine a new concurrency bound.
    func refresh(because cause: RefreshCause) {
        switch file.check() {
        case .unchanged:
            break
        case .loaded:
            services.log("settings: \(file.path) loaded (\(cause.rawValue))")
            services.transfers.setBackgroundConcurrency(file.settings.backgroundDownloadConcurrency)
            // A switch turned back on, or Low Power Mode: held-back events may go now.
            services.delivery.schedulerTick()
        case .rejected(let error):
            services.log("settings: ignoring the edit of \(file.path), keeping the last good ones: \(error)")
        }
    }
}
