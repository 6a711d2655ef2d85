internal import BACore
internal import BADaemonProtocol
import Foundation

#if !canImport(Darwin)
    extension FileManager {
        /// Linux addition (Foundation has it on Apple platforms; swift-corelibs-foundation does not):
        /// the app group container shared by an app and its extension, or nil.
        ///
        /// Finished downloads are delivered inside the container, and its exclusive-control lock
        /// lives there (see ``BADownloadManager/withExclusiveControl(_:)``); what an app keeps,
        /// it keeps there too. Where the answer comes from:
        ///
        /// - **In an extension's process** (or any process with `BA_APP_GROUP_CONTAINER` set, such as
        ///   one the extension started): the runner names the call's container in that environment
        ///   variable. The container is returned when the variable's last path component is
        ///   `groupIdentifier` (containers are `…/groups/<group identifier>`); a call without a
        ///   container, or another group, gives nil. basd is never asked from an extension.
        /// - **In an app's process**: basd names the app's group and container when the app
        ///   connects (connecting now if needed, as any ``BADownloadManager`` call does); the
        ///   container is returned when `groupIdentifier` is the app's `BAAppGroupID`. An unknown
        ///   group or an app without a group give nil. Once known, the answer is remembered, so it
        ///   keeps working while basd restarts. With basd unreachable on the first use, the app's
        ///   own `Info.plist` (next to the executable or one folder up) gives its `BAAppGroupID`, and
        ///   the container is `STATE_DIR/groups/GROUP` in basd's default state folder
        ///   (`$BA_STATE_DIR`, else `$XDG_DATA_HOME/background-assets`, …) when that folder exists.
        ///
        /// The folder exists (basd creates it when the app is registered); nothing is created here.
        ///
        /// ```swift
        /// let download: BADownload = …
        /// if let container = FileManager.default.containerURL(
        ///     forSecurityApplicationGroupIdentifier: download.applicationGroupIdentifier) {
        ///     let assets = container.appendingPathComponent("Assets", isDirectory: true)
        ///     …
        /// }
        /// ```
        /// - Parameter groupIdentifier: The app group, e.g. `group.com.example.game`.
        /// - Returns: The container's URL (a directory), or nil.
        public func containerURL(forSecurityApplicationGroupIdentifier groupIdentifier: String) -> URL? {
            AppGroupContainer.path(forGroup: groupIdentifier).map { URL(fileURLWithPath: $0, isDirectory: true) }
        }
    }
#endif

/// Where an app group's container is, in this process (see
/// `FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`).
enum AppGroupContainer {
    static func path(forGroup group: String) -> String? {
        let environment = ProcessInfo.processInfo.environment
        // Set by the runner for a call with a container; an extension call without one has the
        // variable removed, and an extension never connects to basd as an app.
        if let named = environment[RunnerProtocol.appGroupContainerVariable] {
            return path(forGroup: group, environmentValue: named)
        }
        if ExtensionHostConnection.active != nil { return nil }
        if let path = AppDaemonConnection.shared.containerPath(forGroup: group) { return path }
        return offlinePath(
            forGroup: group, environment: environment,
            infoPlists: AppIdentity.infoPlistCandidates(executablePath: AppIdentity.currentExecutablePath))
    }

    /// Without basd: the container in basd's default state folder, when `group` is the
    /// `BAAppGroupID` of the first of `infoPlists` that exists and the folder is there.
    static func offlinePath(forGroup group: String, environment: [String: String], infoPlists: [String]) -> String? {
        guard !group.isEmpty, !group.contains("/"), group != "..", group != "." else { return nil }
        guard let plistPath = infoPlists.first(where: { FileManager.default.fileExists(atPath: $0) }),
            let data = FileManager.default.contents(atPath: plistPath),
            let plist = (try? PropertyListSerialization.propertyList(from: data, format: nil)) as? [String: Any],
            plist["BAAppGroupID"] as? String == group
        else { return nil }
        let path = DaemonProtocol.defaultStateDirectory(environment) + "/groups/" + group
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return nil
        }
        return path
    }

    /// The extension side: `value` when its last path component is `group`.
    static func path(forGroup group: String, environmentValue value: String) -> String? {
        guard !group.isEmpty, !value.isEmpty else { return nil }
        var trimmed = Substring(value)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        let last = trimmed.split(separator: "/", omittingEmptySubsequences: true).last
        return last.map(String.init) == group ? String(trimmed) : nil
    }
}
