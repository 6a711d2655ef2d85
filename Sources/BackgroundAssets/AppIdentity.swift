import Foundation

/// Who this app process is, for basd: its bundle identifier and basd's socket.
///
/// The bundle identifier comes from, in order: ``BADownloadManager/baConfigure(bundleIdentifier:socketPath:)``,
/// the `BA_BUNDLE_IDENTIFIER` environment variable, or `CFBundleIdentifier` in an `Info.plist`
/// in the executable's folder or its parent (an app directory with the binary in `bin/`).
/// The socket is the configured one, else `DaemonProtocol.defaultSocketPath()` (`BA_SOCKET`, …).
struct AppIdentity: Sendable, Hashable {
    var bundleIdentifier: String
    var socketPath: String

    /// The `Info.plist` files looked at for an executable at `executablePath`, in order.
    static func infoPlistCandidates(executablePath: String) -> [String] {
        let folder = URL(fileURLWithPath: executablePath).deletingLastPathComponent()
        return [
            folder.appendingPathComponent("Info.plist").path,
            folder.deletingLastPathComponent().appendingPathComponent("Info.plist").path,
        ]
    }

    /// This process's executable (`/proc/self/exe`).
    static var currentExecutablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? Bundle.main.executablePath ?? CommandLine.arguments.first ?? ""
    }

    /// Resolves the bundle identifier.
    ///
    /// - Throws: ``BAError/Code/callerConnectionNotAccepted`` saying how to provide one, when none
    ///   of the sources has one, or the `Info.plist` found cannot be read.
    static func resolveBundleIdentifier(
        configured: String?, environment: [String: String], executablePath: String
    ) throws(BAError) -> String {
        if let configured, !configured.isEmpty { return configured }
        if let fromEnvironment = environment["BA_BUNDLE_IDENTIFIER"], !fromEnvironment.isEmpty {
            return fromEnvironment
        }
        let candidates = infoPlistCandidates(executablePath: executablePath)
        for path in candidates where FileManager.default.fileExists(atPath: path) {
            let plist: Any
            do {
                plist = try PropertyListSerialization.propertyList(
                    from: try Data(contentsOf: URL(fileURLWithPath: path)), options: [], format: nil)
            } catch {
                throw BAError(
                    .callerConnectionNotAccepted,
                    reason: "cannot read the app's bundle identifier: \(path) is not a readable property list "
                        + "(\(error.localizedDescription))")
            }
            guard let identifier = (plist as? [String: Any])?["CFBundleIdentifier"] as? String, !identifier.isEmpty
            else {
                throw BAError(
                    .callerConnectionNotAccepted,
                    reason: "cannot read the app's bundle identifier: \(path) has no CFBundleIdentifier string")
            }
            return identifier
        }
        throw BAError(
            .callerConnectionNotAccepted,
            reason: "BADownloadManager does not know this app's bundle identifier, so it cannot talk to basd: "
                + "call BADownloadManager.shared.baConfigure(bundleIdentifier:) first, set BA_BUNDLE_IDENTIFIER, "
                + "or install an Info.plist with CFBundleIdentifier at \(candidates.joined(separator: " or "))")
    }
}
