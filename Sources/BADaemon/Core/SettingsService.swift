import BAScheduling
import BASettings
import Foundation

/// The owner of basd's settings file (`$XDG_CONFIG_HOME/background-assets/config.json`, or the
/// old `STATE_DIR/config.json`): read at start, re-read at once when its folder changes (inotify)
/// and by the scheduler's tick; a bad edit is logged and the last good settings stay.
///
/// It is given only what it needs (``init(file:executor:log:)``); the services it concerns read
/// the settings in force through a reader, and hear of an edit through its ``delegate``.
final class SettingsService: @unchecked Sendable {
    private var file: SettingsFile
    private var watcher: DescriptorWatcher?
    /// The executor the watch posts its reloads to.
    private let executor: ServiceExecutor
    private let log: @Sendable (String) -> Void
    /// Who tells the transfers and the event router of an edit (``BasdServices``); weak, as it
    /// owns this service.
    weak var delegate: (any SettingsServiceDelegate)?

    /// - Parameter file: basd's settings file, already read.
    init(file: SettingsFile, executor: ServiceExecutor, log: @escaping @Sendable (String) -> Void) {
        self.file = file
        self.executor = executor
        self.log = log
    }

    /// The settings in force.
    var current: BasdSettings { file.settings }

    /// Starts watching the settings file's folder (call once, at start).
    func watch() {
        let directory = (file.path as NSString).deletingLastPathComponent
        do {
            // Weak: the watcher's thread may outlive basd's services (an in-process test).
            watcher = try SettingsWatcher.start(directory: directory, executor: executor) { [weak self] in
                self?.refresh(because: .folderChanged)
            }
        } catch {
            log("settings: not watching \(directory) (\(error)); edits apply at the next scheduler tick")
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

    /// Re-reads the file if it changed and reports new settings to the ``delegate``.
    func refresh(because cause: RefreshCause) {
        switch file.check() {
        case .unchanged:
            break
        case .loaded:
            log("settings: \(file.path) loaded (\(cause.rawValue))")
            delegate?.settingsService(self, loaded: file.settings)
        case .rejected(let error):
            log("settings: ignoring the edit of \(file.path), keeping the last good ones: \(error)")
        }
    }
}
