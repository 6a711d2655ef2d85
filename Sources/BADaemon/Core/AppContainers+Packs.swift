import Foundation

// Asset packs (issue 21), one namespace per app (issue 33): where each app of a group reads its
// own packs, and the group's shared `AssetPacks` link.
extension AppContainers {
    /// basd's own folder for every app's asset packs: `STATE_DIR/packs`.
    var packsDirectory: String { stateDirectory + "/packs" }

    /// Where `app`'s packs live (the pack service's root): versions, staging, indexes and the
    /// `AssetPacks/ID` links switched atomically. Outside every container: no extension can plant
    /// a link in it.
    func packRoot(app: String) -> String { packsDirectory + "/" + app }

    /// The folder of links the app reads its packs through: `ROOT/AssetPacks`.
    func packLinks(app: String) -> String { packRoot(app: app) + "/AssetPacks" }

    /// The container's folder of per-app links: `CONTAINER/AppAssetPacks`.
    static let appLinksFolder = "AppAssetPacks"

    /// The container's link to one app's packs, kept for a group with one app that has packs.
    static let sharedLinkName = "AssetPacks"

    /// Where `app` reads pack `id`: `CONTAINER/AppAssetPacks/APP/ID`, its own whatever other apps
    /// its group has.
    func packPath(group: String, app: String, id: String) -> String {
        container(group: group) + "/" + Self.appLinksFolder + "/" + app + "/" + id
    }

    /// Makes `group`'s pack links match `apps` (the group's apps that get packs, in any order):
    ///
    /// - `CONTAINER/AppAssetPacks/APP` is a link to ``packLinks(app:)`` for each app of `apps`;
    ///   links there of any other app (uninstalled, or without packs now) are removed, and the
    ///   folder too once empty.
    /// - `CONTAINER/AssetPacks` is a link to one app's packs: the app it leads to now if that app
    ///   is still in `apps`, else the first of `apps` by bundle identifier; removed when `apps`
    ///   is empty. So a group with one app that has packs reads `CONTAINER/AssetPacks/ID` as
    ///   before, and uninstalling one app of two never leaves it dangling.
    ///
    /// The container is opened without following links and every link is made with
    /// `symlinkat`/`renameat` inside it, so whatever an extension planted is replaced, never
    /// followed. A missing container with no app left is fine.
    ///
    /// - Throws: ``ContainerError`` naming what to move when a real folder or file of the app's
    ///   stands where a link goes (`AssetPacks`, `AppAssetPacks` or an app's link in it): basd
    ///   never removes what is not its own.
    func linkPacks(group: String, apps: [String]) throws(ContainerError) {
        let apps = apps.sorted()
        let path = container(group: group)
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT && apps.isEmpty { return }
            throw ContainerError("cannot open the container \(path): \(Self.reason())")
        }
        defer { close(fd) }
        try linkEach(container: fd, path: path, apps: apps)
        let shared = path + "/" + Self.sharedLinkName
        switch Self.kind(Self.sharedLinkName, in: fd) {
        case .absent:
            if let first = apps.first {
                try Self.link(Self.sharedLinkName, in: fd, to: packLinks(app: first), display: shared)
            }
        case .link(let target):
            if apps.contains(where: { packLinks(app: $0) == target }) { return }
            if let first = apps.first {
                try Self.link(Self.sharedLinkName, in: fd, to: packLinks(app: first), display: shared)
            } else if unlinkat(fd, Self.sharedLinkName, 0) != 0 && errno != ENOENT {
                throw ContainerError("cannot remove the link \(shared): \(Self.reason())")
            }
        case .other:
            // Left alone when no app needs it: it is the app's.
            guard let first = apps.first else { return }
            throw ContainerError(
                "\(shared) is a folder (or file) of the app's own where basd links the app group's asset packs: move it out of the way (for example `mv \(shared) \(shared).moved`), then `ba packs check \(first)`"
            )
        }
    }

    /// The per-app links in `CONTAINER/AppAssetPacks` (see ``linkPacks(group:apps:)``).
    private func linkEach(container fd: Int32, path: String, apps: [String]) throws(ContainerError) {
        let display = path + "/" + Self.appLinksFolder
        if !apps.isEmpty, mkdirat(fd, Self.appLinksFolder, 0o700) != 0, errno != EEXIST {
            throw ContainerError("cannot create the folder \(display): \(Self.reason())")
        }
        let folder = openat(fd, Self.appLinksFolder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else {
            if errno == ENOENT && apps.isEmpty { return }
            if errno == ELOOP || errno == ENOTDIR {
                throw ContainerError(
                    "\(display) is a symbolic link or a file where basd keeps the links to each app's asset packs: move it out of the way, then `ba packs check \(apps.first ?? "APP")`"
                )
            }
            throw ContainerError("cannot open the folder \(display): \(Self.reason())")
        }
        defer { close(folder) }
        for app in apps {
            try Self.link(app, in: folder, to: packLinks(app: app), display: display + "/" + app)
        }
        let wanted = Set(apps)
        var left = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd/\(folder)")) ?? [] {
            guard !wanted.contains(name) else {
                left += 1
                continue
            }
            // Another app's link (uninstalled, or without packs now) goes; anything else stays.
            if case .link = Self.kind(name, in: folder), unlinkat(folder, name, 0) == 0 { continue }
            left += 1
        }
        if left == 0 { unlinkat(fd, Self.appLinksFolder, AT_REMOVEDIR) }
    }

    private enum Entry {
        case absent
        case link(String)
        case other
    }

    /// What `name` in the folder `fd` is, without following it.
    private static func kind(_ name: String, in fd: Int32) -> Entry {
        var info = stat()
        guard fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return errno == ENOENT ? .absent : .other }
        guard info.st_mode & S_IFMT == S_IFLNK else { return .other }
        var buffer = [CChar](repeating: 0, count: 4097)
        let length = readlinkat(fd, name, &buffer, 4096)
        guard length >= 0 else { return .other }
        return .link(String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// Makes `name` in the folder `fd` a link to `target`: nothing to do if it is one; else a new
    /// link renamed over it (a link or nothing; a folder or file there is refused by `renameat`).
    private static func link(_ name: String, in fd: Int32, to target: String, display: String) throws(ContainerError) {
        if case .link(target) = kind(name, in: fd) { return }
        if case .other = kind(name, in: fd) {
            throw ContainerError(
                "\(display) is a folder (or file) of the app's own where basd links asset packs: move it out of the way, then `ba packs check`"
            )
        }
        let temporary = ".\(name).\(getpid()).new"
        unlinkat(fd, temporary, 0)
        guard symlinkat(target, fd, temporary) == 0 else {
            throw ContainerError("cannot link \(display): \(reason())")
        }
        guard renameat(fd, temporary, fd, name) == 0 else {
            let why = reason()
            unlinkat(fd, temporary, 0)
            throw ContainerError("cannot make \(display) a link to \(target) (\(why))")
        }
    }

    private static func reason() -> String { String(cString: strerror(errno)) }
}
