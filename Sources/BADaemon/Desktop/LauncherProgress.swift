import BAAppBundle
import BADaemonProtocol
import BADesktopBus
import BAStore
import Foundation

/// Install progress on the desktop's launcher: while an app's essential downloads run (and any
/// download of an app that is not running), basd sends `com.canonical.Unity.LauncherEntry`
/// `Update` signals on the session bus for `application://ID.desktop` — what KDE Plasma's task
/// manager, Ubuntu's dock, dash-to-dock, Plank and Latte show as a bar on the app's icon — and
/// clears the entry when they are done (``LauncherProgressTracker`` has the rules).
///
/// Fed on the executor by ``BasdServices`` with the transfers' recorded events and transient
/// progress. The desktop file id (`BADesktopEntry` in the app's Info.plist, else its bundle
/// identifier) is read at an app's first update and again after each install or update of the
/// app, on a queue of its own, where the signals are also sent, in order.
final class LauncherProgress: @unchecked Sendable {
    static let interface = "com.canonical.Unity.LauncherEntry"

    private let bus: DesktopBus
    private let executor: ServiceExecutor
    private let clock: ServiceClock
    private let startedAt: ContinuousClock.Instant
    /// Whether an app has a session connected (it is running): then only its essential downloads count.
    private let isRunning: (String) -> Bool
    /// An app's directory (its Info.plist names the desktop entry), from the store.
    private let appDirectory: (String) -> String?
    // Executor-confined.
    private var tracker = LauncherProgressTracker()
    /// Where the signals are made (the Info.plist read) and handed to the bus, in order.
    private let sending = DispatchQueue(label: "basd-launcher-entry")
    /// Desktop file ids by bundle identifier (`sending`-confined).
    nonisolated(unsafe) private var desktopIDs: [String: String] = [:]

    init(
        bus: DesktopBus, executor: ServiceExecutor, clock: ServiceClock, isRunning: @escaping (String) -> Bool,
        appDirectory: @escaping (String) -> String?
    ) {
        self.bus = bus
        self.executor = executor
        self.clock = clock
        self.startedAt = clock.instant
        self.isRunning = isRunning
        self.appDirectory = appDirectory
    }

    private var now: Duration { clock.instant - startedAt }

    /// A download's event was recorded.
    func recorded(_ event: StoredEvent) {
        let app = event.appIdentifier
        let id = event.downloadUniqueIdentifier
        switch event.change {
        case .began(let offset, _):
            guard let download = event.download, download.isEssential || !isRunning(app) else { return }
            let total = download.expectedSize
            feed(.began(app: app, id: id, bytes: offset, total: total))
        case .progress(let bytes, let total):
            if tracker.counts(id, of: app) {
                feed(.progress(app: app, id: id, bytes: bytes, total: total))
            } else if let download = event.download, download.isEssential || !isRunning(app) {
                // Began before basd followed it (a download resumed with no `began` recorded since).
                feed(.began(app: app, id: id, bytes: bytes, total: total ?? download.expectedSize))
            }
        case .finished:
            feed(.ended(app: app, id: id, failed: false))
        case .failed:
            feed(.ended(app: app, id: id, failed: true))
        case .paused, .needsCredentials, .waiting:
            break
        }
    }

    /// Progress between two durable records.
    func progress(of download: StoredDownload, bytesWritten: Int64, totalBytes: Int64?) {
        guard tracker.counts(download.uniqueIdentifier, of: download.appIdentifier) else { return }
        feed(
            .progress(
                app: download.appIdentifier, id: download.uniqueIdentifier, bytes: bytesWritten, total: totalBytes))
    }

    /// An asset pack's event: an essential pack's install (any pack's, when the app is not
    /// running) counts as a download does, by its bytes present over its size.
    func packEvent(_ event: PackEvent, isEssential: Bool) {
        let app = event.appIdentifier
        let id = "pack:" + event.assetPackID
        switch event.kind {
        case .began:
            guard !tracker.counts(id, of: app), isEssential || !isRunning(app) else { return }
            feed(.began(app: app, id: id, bytes: event.bytesPresent ?? 0, total: event.bytesTotal))
        case .progress:
            if !tracker.counts(id, of: app), isEssential || !isRunning(app) {
                feed(.began(app: app, id: id, bytes: event.bytesPresent ?? 0, total: event.bytesTotal))
            } else {
                feed(.progress(app: app, id: id, bytes: event.bytesPresent ?? 0, total: event.bytesTotal))
            }
        case .finished: feed(.ended(app: app, id: id, failed: false))
        case .failed: feed(.ended(app: app, id: id, failed: true))
        case .paused, .removed, .obsolete: break
        }
    }

    /// The app was uninstalled: its entry is cleared (its transfers were dropped without ending),
    /// then its desktop file id forgotten.
    func appGone(_ app: String) {
        feed(.appGone(app: app))
        sending.async { [self] in desktopIDs[app] = nil }
    }

    /// The app was registered or updated: its desktop file id is read again at its next update
    /// (an update may change `BADesktopEntry`).
    func appChanged(_ app: String) {
        sending.async { [self] in desktopIDs[app] = nil }
    }

    /// A download was cancelled (its row is gone): it ends its app's set without failing it.
    func cancelled(app: String, uniqueIdentifier: String) {
        feed(.ended(app: app, id: uniqueIdentifier, failed: false))
    }

    private func feed(_ input: LauncherProgressTracker.Input) {
        for action in tracker.handle(input, now: now) {
            switch action {
            case .send(let app, let entry):
                send(entry, for: app, directory: appDirectory(app))
            case .flushAfter(let app, let delay):
                executor.after(delay) { [self] in feed(.flushDue(app: app)) }
            }
        }
    }

    private func send(_ entry: LauncherProgressTracker.Entry, for app: String, directory: String?) {
        let bus = bus
        sending.async { [self] in
            let id = desktopID(of: app, directory: directory)
            let uri = "application://\(id).desktop"
            var properties: [BusArgument.DictionaryEntry] = [
                .init("progress", .double(entry.progress)), .init("progress-visible", .bool(entry.visible)),
                .init("count", .int64(Int64(entry.remaining))),
                .init("count-visible", .bool(entry.visible && entry.remaining > 1)),
            ]
            properties.append(.init("urgent", .bool(entry.urgent)))
            bus.emitSignal(
                path: Self.objectPath(uri), interface: Self.interface, member: "Update",
                arguments: [.value(.string(uri)), .dictionary(properties)])
        }
    }

    /// The app's desktop file id: its Info.plist's `BADesktopEntry`, else its bundle identifier
    /// (also when the Info.plist cannot be read now).
    private func desktopID(of app: String, directory: String?) -> String {
        if let known = desktopIDs[app] { return known }
        let id = directory.flatMap { try? AppBundle.load(directory: $0).desktopEntry } ?? app
        desktopIDs[app] = id
        return id
    }

    /// The object path of an app's entry: `/com/canonical/unity/launcherentry/` and a hash of its
    /// URI (launchers go by the URI argument; the path only has to be a valid, stable one).
    static func objectPath(_ uri: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for byte in uri.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0100_0000_01b3
        }
        return "/com/canonical/unity/launcherentry/\(hash)"
    }
}
