import BADaemonProtocol
import BAStore
import Foundation

/// Apps registered the Linux way: a package (deb, rpm, a Flatpak export, a Snap, a tarball's
/// install script) puts the app's directory, or a symlink to it, into the drop-in folder
/// `background-assets/apps/` of `$XDG_DATA_HOME` or of a folder of `$XDG_DATA_DIRS`, the way
/// `.desktop` files are found. Every user's basd looks at those folders at start and watches
/// them: a new registration is a first install, a changed one (its `Info.plist`) an update, a
/// removed one an uninstall. Nothing runs as root.
///
/// An app counts as discovered when its registered directory is a drop-in path
/// (`FOLDER/NAME`): `ba install` of any other path is the manual case, never uninstalled here.
/// A name in an earlier folder hides the same name in later ones (`$XDG_DATA_HOME` first).
/// A registration that goes is uninstalled only if it is still gone ``removalGrace`` later (a
/// package upgrade that replaces it is not an uninstall).
///
/// Owns: the watched folders and what it last saw of each registration (executor).
final class AppDiscovery: @unchecked Sendable {
    /// What was last seen of a registration: its `Info.plist`'s change time, size and inode.
    struct Stamp: Hashable {
        var changedNanoseconds: Int64
        var size: Int64
        var inode: UInt64
    }

    /// At most this many registrations are looked at per folder (a folder of junk costs little).
    static let maximumEntries = 1000
    /// How long a registration must stay gone before its app is uninstalled.
    let removalGrace: Duration
    /// A look at the folders even without an inotify event (a folder made later, a file system
    /// without inotify).
    let rescanInterval: Duration

    let folders: [String]
    private let store: BAStore
    private let executor: ServiceExecutor
    private let installer: AppInstaller
    private let clock: ServiceClock
    private let log: @Sendable (String) -> Void

    /// Where the folders are read, one look at a time.
    private let reading = DispatchQueue(label: "basd-app-discovery", qos: .utility)
    private var seen: [String: Stamp] = [:]
    private var missingSince: [String: ContinuousClock.Instant] = [:]
    private var busy: Set<String> = []
    private var watcher: DescriptorWatcher?
    private var inotify: Int32 = -1
    private var watches: [String: Int32] = [:]
    private var scanQueued = false
    private var stopped = false
    /// Looks at the folders not yet acted on.
    private var looking = 0

    init(
        folders: [String], store: BAStore, executor: ServiceExecutor, installer: AppInstaller, clock: ServiceClock,
        removalGrace: Duration = .seconds(3), rescanInterval: Duration = .seconds(60),
        log: @escaping @Sendable (String) -> Void
    ) {
        self.folders = folders
        self.store = store
        self.executor = executor
        self.installer = installer
        self.clock = clock
        self.removalGrace = removalGrace
        self.rescanInterval = rescanInterval
        self.log = log
    }

    /// The drop-in folders for `environment`, in precedence order: `$XDG_DATA_HOME` (default
    /// `~/.local/share`), then each of `$XDG_DATA_DIRS` (default `/usr/local/share:/usr/share`),
    /// each with `background-assets/apps` appended; relative entries are ignored, as the XDG
    /// specification says.
    static func folders(_ environment: [String: String]) -> [String] {
        var bases: [String] = []
        if let home = environment["XDG_DATA_HOME"], home.hasPrefix("/") {
            bases.append(home)
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            bases.append(home + "/.local/share")
        }
        let dirs = environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share"
        bases += dirs.split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        var folders: [String] = []
        for base in bases {
            var trimmed = base
            while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
            let folder = trimmed + "/background-assets/apps"
            if !folders.contains(folder) { folders.append(folder) }
        }
        return folders
    }

    /// Looks now, then on every change and every ``rescanInterval`` (executor).
    func start() {
        if let first = folders.first {
            // The user's own folder is made, so that it can be watched from the start.
            try? FileManager.default.createDirectory(atPath: first, withIntermediateDirectories: true)
        }
        let fd = inotify_init1(Int32(IN_CLOEXEC) | Int32(IN_NONBLOCK))
        if fd >= 0 {
            do {
                watcher = try DescriptorWatcher(
                    fd: fd, name: "basd-apps", executor: executor,
                    drain: { fd in
                        var buffer = [UInt8](repeating: 0, count: 4096)
                        while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
                    },
                    changed: { [weak self] in self?.queueScan(after: .milliseconds(200)) })
                inotify = fd
            } catch {
                close(fd)
                log("app discovery: not watching the drop-in folders (\(error)); they are looked at every minute")
            }
        }
        log("app discovery: looking for app registrations in \(folders.joined(separator: ", "))")
        scan()
        tick()
    }

    func stop() {
        stopped = true
        watcher?.stop()
        watcher = nil
    }

    private func tick() {
        _ = executor.after(rescanInterval) { [weak self] in
            guard let self, !self.stopped else { return }
            self.scan()
            self.tick()
        }
    }

    private func queueScan(after delay: Duration) {
        guard !scanQueued, !stopped else { return }
        scanQueued = true
        _ = executor.after(delay) { [weak self] in
            guard let self else { return }
            self.scanQueued = false
            self.scan()
        }
    }

    /// The registrations in the folders now: drop-in path → its `Info.plist`'s stamp.
    func registrations() -> [String: Stamp] {
        var found: [String: Stamp] = [:]
        var names: Set<String> = []
        for folder in folders {
            let entries = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
            for name in entries.prefix(Self.maximumEntries) where !name.hasPrefix(".") && !names.contains(name) {
                let path = folder + "/" + name
                var info = stat()
                // Follows a symlink: the app's directory, wherever the package put it.
                guard stat(path + "/Info.plist", &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
                names.insert(name)
                found[path] = Stamp(
                    changedNanoseconds: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec),
                    size: Int64(info.st_size), inode: UInt64(info.st_ino))
            }
        }
        return found
    }

    /// Whether `directory` (an app's registered directory) is a drop-in path.
    func isDropIn(_ directory: String) -> Bool {
        folders.contains { folder in
            directory.hasPrefix(folder + "/") && !directory.dropFirst(folder.count + 1).contains("/")
        }
    }

    /// Looks at the folders on a queue of its own (the paths are the packages': a slow file
    /// system must not stop basd serving everyone else, as for `ba install`), then acts on what
    /// it saw on the executor, in the order the looks were made.
    func scan() {
        guard !stopped else { return }
        looking += 1
        reading.async { [weak self] in
            guard let self else { return }
            let now = self.registrations()
            self.executor.async { [weak self] in
                self?.looking -= 1
                self?.apply(now)
            }
        }
    }

    /// What discovery has under way that basd must stay for (``IdleExit``): a look at the folders,
    /// a registration being installed or uninstalled, a removal waiting out its grace.
    var idleBlockers: [String] {
        var blockers: [String] = []
        if looking > 0 || scanQueued { blockers.append("app discovery is looking at its folders") }
        if !busy.isEmpty { blockers.append("app discovery is installing \(busy.sorted().joined(separator: ", "))") }
        if !missingSince.isEmpty { blockers.append("app discovery waits to uninstall \(missingSince.count) app(s)") }
        return blockers
    }

    /// Installs, updates and uninstalls as the folders say (executor).
    private func apply(_ now: [String: Stamp]) {
        guard !stopped else { return }
        watch(Array(now.keys))
        for (path, stamp) in now.sorted(by: { $0.key < $1.key }) where seen[path] != stamp && !busy.contains(path) {
            busy.insert(path)
            installer.install(InstallRequest(appDirectory: path, mode: .automatic)) { [weak self] result in
                self?.installed(path, stamp: stamp, result: result)
            }
        }
        missingSince = missingSince.filter { now[$0.key] == nil }
        let apps = (try? store.apps()) ?? []
        for app in apps where isDropIn(app.appDirectory) && now[app.appDirectory] == nil {
            let path = app.appDirectory
            seen[path] = nil
            guard !busy.contains(path) else { continue }
            let since = missingSince[path] ?? clock.instant
            missingSince[path] = since
            guard clock.instant - since >= removalGrace else {
                queueScan(after: removalGrace)
                continue
            }
            missingSince[path] = nil
            busy.insert(path)
            log("app discovery: \(path) is gone: uninstalling \(app.bundleIdentifier)")
            installer.uninstall(app.bundleIdentifier, keepData: false, why: "its registration \(path) was removed") {
                [weak self] _ in
                self?.busy.remove(path)
            }
        }
    }

    private func installed(_ path: String, stamp: Stamp, result: ServerMessage.Result) {
        busy.remove(path)
        switch result {
        case .extensionRun(let report):
            seen[path] = stamp
            if let skipped = report.skipped {
                log("app discovery: \(path): \(report.bundleIdentifier) \(report.version): \(skipped)")
            } else {
                let what = report.previousVersion.map { "updated from \($0)" } ?? "installed"
                log("app discovery: \(path): \(report.bundleIdentifier) \(report.version) \(what)")
            }
        case .error(_, let message):
            // Remembered: tried again when its Info.plist changes (or basd restarts), not every minute.
            seen[path] = stamp
            log("app discovery: \(path) cannot be installed: \(message)")
        default:
            seen[path] = stamp
        }
    }

    /// Watches the folders and each registered app's directory (its `Info.plist` is replaced on
    /// an update), and nothing else.
    private func watch(_ registrations: [String]) {
        guard inotify >= 0 else { return }
        let folderMask =
            UInt32(IN_CREATE) | UInt32(IN_DELETE) | UInt32(IN_MOVED_FROM) | UInt32(IN_MOVED_TO) | UInt32(IN_ATTRIB)
            | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF)
        let appMask = UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_CREATE) | UInt32(IN_ATTRIB)
        var wanted: [String: UInt32] = [:]
        for folder in folders where FileManager.default.fileExists(atPath: folder) { wanted[folder] = folderMask }
        for path in registrations { wanted[path] = appMask }
        for (path, wd) in watches where wanted[path] == nil {
            inotify_rm_watch(inotify, wd)
            watches[path] = nil
        }
        // Added again each time: a folder removed and made anew has lost its watch.
        for (path, mask) in wanted {
            let wd = inotify_add_watch(inotify, path, mask)
            watches[path] = wd >= 0 ? wd : nil
        }
    }
}
