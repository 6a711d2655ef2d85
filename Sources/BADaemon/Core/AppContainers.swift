import Foundation

/// Where basd keeps each app group's files, under its state folder:
///
/// ```
/// STATE_DIR/groups/GROUP_ID/                                   the app group container (0700)
///   .background-assets-exclusive-control.lock                  withExclusiveControl's lock
/// STATE_DIR/transfers/GROUP_ID/                                basd's own, never an extension's
///   partial/UNIQUE_ID-IDENTIFIER.part                          a transfer in flight (+ .validator)
///   finished/UNIQUE_ID-IDENTIFIER                              a finished file, until delivered
/// ```
///
/// **Containers are never followed.** An extension can write its container, so anything basd
/// reached through a path inside it could be a symbolic link the extension planted (the
/// confused-deputy attack: basd, unsandboxed, would write and later grant wherever the link
/// leads). So basd's bookkeeping lives outside the container, in `transfers/`, whose folders no
/// extension can replace: the only one an extension call is ever granted is its group's
/// `finished/` folder (in a `finished` call, to move the file out), and that grant reaches the
/// folder's entries, never the folder's own name in `transfers/GROUP_ID/`. Every file basd
/// touches in `finished/` is renamed over, unlinked or opened with `O_NOFOLLOW`, so a link an
/// extension planted there is replaced or refused, never followed. The one file basd opens in the
/// container, the lock, is opened with `O_NOFOLLOW` (`docs/threat-model.md`, "Confused deputy").
///
/// Group and download identifiers are checked by `DownloadRules` (no `/`, no `..`, no NUL) before
/// they get here, so every path stays inside the state folder.
struct AppContainers: Sendable {
    let stateDirectory: String

    var groupsDirectory: String { stateDirectory + "/groups" }

    func container(group: String) -> String { groupsDirectory + "/" + group }

    /// basd's own folders for `group`'s transfers (`partial/` and `finished/`).
    var transfersDirectory: String { stateDirectory + "/transfers" }

    func transfers(group: String) -> String { transfersDirectory + "/" + group }

    /// Where `group`'s finished files wait to be delivered; the one folder of basd's a `finished`
    /// call may write (to move its file out).
    func finishedDirectory(group: String) -> String { transfers(group: group) + "/finished" }

    /// Where `group`'s transfers keep their partial files; no extension call ever reaches it.
    func partialDirectory(group: String) -> String { transfers(group: group) + "/partial" }

    /// The folder that held finished and partial files inside the container before they moved to
    /// `transfers/` (checked, never followed, only to clean it up).
    func legacyDownloadsDirectory(group: String) -> String { container(group: group) + "/.background-assets/downloads" }

    /// Where download `uniqueIdentifier` (`identifier`) of `group` is delivered.
    ///
    /// The file name is `UNIQUE_ID-IDENTIFIER`, cut (on a character boundary) to at most
    /// ``maximumNameBytes`` so that it and its partial file's sidecar (`NAME.part.validator`) fit
    /// a file system's 255-byte name limit, whatever the identifier's length (up to 1024 bytes).
    func destination(group: String, uniqueIdentifier: String, identifier: String) -> String {
        finishedDirectory(group: group) + "/"
            + Self.fileName(uniqueIdentifier: uniqueIdentifier, identifier: identifier)
    }

    /// The partial file of download `uniqueIdentifier` (`identifier`) of `group`.
    func partialPath(group: String, uniqueIdentifier: String, identifier: String) -> String {
        partialDirectory(group: group) + "/" + Self.fileName(uniqueIdentifier: uniqueIdentifier, identifier: identifier)
            + ".part"
    }

    static func fileName(uniqueIdentifier: String, identifier: String) -> String {
        var name = uniqueIdentifier + "-" + identifier
        while name.utf8.count > maximumNameBytes { name.removeLast() }
        return name
    }

    /// 255 bytes less `.part.validator`.
    static let maximumNameBytes = 255 - ".part.validator".utf8.count

    /// Creates the container and basd's transfer folders for it (0700) if missing; returns the
    /// container. Each must be a real folder: a symbolic link (or anything else) where one should
    /// be is refused, never followed.
    @discardableResult
    func prepare(group: String) throws -> String {
        for directory in [
            stateDirectory, groupsDirectory, container(group: group), transfersDirectory, transfers(group: group),
            partialDirectory(group: group), finishedDirectory(group: group),
        ] {
            try Self.makeDirectory(directory)
        }
        return container(group: group)
    }

    /// `mkdir` (0700), then `lstat`: a folder that is there already is fine, a link or a file is
    /// an error that names it.
    static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw ContainerError("cannot create the folder \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw ContainerError("cannot check the folder \(path): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            let what = (info.st_mode & S_IFMT) == S_IFLNK ? "a symbolic link" : "not a folder"
            throw ContainerError(
                "\(path) is \(what) where basd keeps a folder of its own; it is never followed: remove it")
        }
    }

    /// Removes what basd left inside `group`'s container before its files moved to `transfers/`:
    /// `.background-assets/downloads/.ba-partial/` (partial files, which start over) and the
    /// folders if empty. Each is opened without following links; a link is left alone. Finished
    /// files still there stay until their event is delivered.
    func removeLegacyPartialFiles(group: String) {
        let downloads = legacyDownloadsDirectory(group: group)
        let partial = downloads + "/.ba-partial"
        guard Self.isRealDirectory(container(group: group) + "/.background-assets"), Self.isRealDirectory(downloads),
            Self.isRealDirectory(partial)
        else { return }
        let fd = open(partial, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        if let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd/\(fd)") {
            for name in names { unlinkat(fd, name, 0) }
        }
        _ = rmdir(partial)
        _ = rmdir(downloads)
    }

    static func isRealDirectory(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }
}

/// A container folder basd cannot use (a planted link, a file where a folder should be).
struct ContainerError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
