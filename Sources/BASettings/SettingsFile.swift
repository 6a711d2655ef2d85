import BAScheduling

/// basd's settings file, re-read when it changes so that edits apply without a restart.
///
/// ``check()`` `stat`s the file and re-reads it only when its size, modification or change time,
/// inode or existence changed since the last check. A bad edit is reported once and the last good settings
/// stay in force until the file is fixed; removing the file returns to the defaults.
///
/// ```swift
/// var file = SettingsFile(path: stateDirectory + "/config.json")
/// // at start-up, and then every few seconds or on SIGHUP, on basd's serial queue:
/// switch file.check() {
/// case .unchanged: break
/// case .loaded(let settings): log.info("settings: \(settings)")
/// case .rejected(let error): log.error("\(error); keeping the previous settings")
/// }
/// let settings = file.settings
/// ```
package struct SettingsFile: Sendable {
    /// What a ``SettingsFile/check()`` found.
    package enum Change: Sendable, Equatable {
        /// The file is as it was at the last check; ``SettingsFile/settings`` did not change.
        case unchanged
        /// The file was read (for the first time, or after it changed or was removed) and these are
        /// now ``SettingsFile/settings``.
        case loaded(BasdSettings)
        /// The file changed but cannot be used; ``SettingsFile/settings`` keeps the last good
        /// settings (the defaults if none ever loaded). Reported once per change of the file.
        case rejected(SettingsError)
    }

    /// What the last check saw, to tell whether the file changed.
    private enum Stamp: Equatable, Sendable {
        case missing
        case present(FileStatus)
        /// `stat` failed other than for a missing file.
        case unreadable(FileStatus.Failure)
    }

    /// The settings file's path.
    package let path: String
    /// The settings in force: the last that loaded, or the defaults.
    package private(set) var settings: BasdSettings
    /// The error of the last rejected edit, nil once a good version loads.
    package private(set) var lastError: SettingsError?
    private var stamp: Stamp?

    /// A settings file not read yet: ``settings`` are the defaults until the first ``check()``.
    ///
    /// - Parameter path: The file, e.g. `STATE_DIR/config.json`; it need not exist.
    package init(path: String) {
        self.path = path
        self.settings = BasdSettings()
        self.lastError = nil
        self.stamp = nil
    }

    /// Re-reads the file if it changed since the last check (always on the first).
    ///
    /// - Returns: What changed; ``settings`` is up to date when it returns.
    package mutating func check() -> Change {
        // Stat before reading: an edit landing between the two makes the next check see a new
        // stamp and read again, never the reverse (new stamp, old contents).
        let now: Stamp =
            switch FileStatus.of(path) {
            case .success(let status): .present(status)
            case .failure(let failure) where failure.isMissing: .missing
            case .failure(let failure): .unreadable(failure)
            }
        if now == stamp { return .unchanged }
        stamp = now
        do {
            settings = try BasdSettings.load(path: path)
            lastError = nil
            return .loaded(settings)
        } catch {
            lastError = error
            return .rejected(error)
        }
    }
}
