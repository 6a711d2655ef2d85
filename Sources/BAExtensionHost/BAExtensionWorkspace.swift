import Foundation

/// A private (0700) temporary folder for one extension call: the read-only manifest copy the
/// extension gets, an app group container, a finished file. Removed by ``remove()``.
package struct BAExtensionWorkspace: Sendable {
    package let url: URL

    package init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("ba-call-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// A folder inside the workspace.
    package func directory(_ name: String) throws -> String {
        let directory = url.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.path
    }

    /// A read-only (0400) file: how a manifest is handed to an extension, which may read it and
    /// not change it; it goes with the workspace after the call.
    package func readOnlyFile(named name: String, contents: Data) throws(BAExtensionHostError) -> String {
        try file(named: name, contents: contents, mode: 0o400)
    }

    /// An empty file.
    package func emptyFile(named name: String) throws(BAExtensionHostError) -> String {
        try file(named: name, contents: Data(), mode: 0o644)
    }

    private func file(named name: String, contents: Data, mode: Int) throws(BAExtensionHostError) -> String {
        let path = url.appendingPathComponent(name).path
        guard FileManager.default.createFile(atPath: path, contents: contents, attributes: [.posixPermissions: mode])
        else {
            throw BAExtensionHostError("cannot create \(path)")
        }
        return path
    }

    /// Removes the folder (a read-only file inside only needs the folder to be writable).
    package func remove() { try? FileManager.default.removeItem(at: url) }
}
