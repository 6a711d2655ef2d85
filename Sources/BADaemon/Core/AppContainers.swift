import Foundation

/// Where basd keeps each app group's files, under its state folder:
///
/// ```
/// STATE_DIR/groups/GROUP_ID/                                   the app group container (0700)
///   .background-assets-exclusive-control.lock                  withExclusiveControl's lock
///   .background-assets/downloads/UNIQUE_ID-IDENTIFIER          a finished file, until delivered
///   .background-assets/downloads/.ba-partial/….part            a transfer in flight (+ .validator)
/// ```
///
/// Group and download identifiers are checked by `DownloadRules` (no `/`, no `..`, no NUL) before
/// they get here, so every path stays inside the state folder.
struct AppContainers: Sendable {
    let stateDirectory: String

    var groupsDirectory: String { stateDirectory + "/groups" }

    func container(group: String) -> String { groupsDirectory + "/" + group }

    func downloadsDirectory(group: String) -> String { container(group: group) + "/.background-assets/downloads" }

    /// Where download `uniqueIdentifier` (`identifier`) of `group` is delivered.
    ///
    /// The file name is `UNIQUE_ID-IDENTIFIER`, cut (on a character boundary) to at most
    /// ``maximumNameBytes`` so that it and its partial file's sidecar (`NAME.part.validator`) fit
    /// a file system's 255-byte name limit, whatever the identifier's length (up to 1024 bytes).
    func destination(group: String, uniqueIdentifier: String, identifier: String) -> String {
        var name = uniqueIdentifier + "-" + identifier
        while name.utf8.count > Self.maximumNameBytes { name.removeLast() }
        return downloadsDirectory(group: group) + "/" + name
    }

    /// 255 bytes less `.part.validator`.
    static let maximumNameBytes = 255 - ".part.validator".utf8.count

    /// Creates the container and its downloads folder (0700) if missing; returns the container.
    @discardableResult
    func prepare(group: String) throws -> String {
        let manager = FileManager.default
        for directory in [groupsDirectory, container(group: group), downloadsDirectory(group: group)] {
            try manager.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        return container(group: group)
    }
}
