import Foundation

/// What an extension call may do besides run: the kernel mechanisms the runner confines it with
/// (docs/threat-model.md, "The sandbox").
///
/// With the sandbox on (the default), each call gets a user, pid and network namespace of its
/// own, `no_new_privs`, a bound on its processes (`RLIMIT_NPROC`, not applied by the kernel to
/// uid 0), Landlock (read-only: system and Swift runtime libraries, the extension's folder, the
/// manifest; read-write: the app group container, the finished file's folder and a private
/// temporary folder; nothing else) and a seccomp filter (no new sockets, no `ptrace`, no
/// `process_vm_*`, mounts, namespaces, `bpf`, `keyctl`, …). A layer the kernel refuses ends the
/// call as ``BAExtensionVerdict/sandboxUnavailable(reason:)`` before the extension is loaded.
///
/// With it off, only the user and pid namespaces remain (every process of the call still ends
/// with it): for debugging an extension, never for production. A supervisor made with it off
/// says so on stderr.
public struct BAExtensionSandbox: Sendable, Equatable {
    /// Whether the sandbox's layers are applied.
    public var isEnabled: Bool
    /// More paths every call may read (and execute), e.g. a folder of libraries outside `/usr`.
    public var readOnlyPaths: [String]
    /// More paths every call may read and write.
    public var readWritePaths: [String]
    /// Most processes (threads count) of the call at once, 0 for no bound. A Swift extension
    /// using concurrency needs about as many threads as cores, plus a few.
    public var maximumProcesses: UInt64

    /// The default bound on a call's processes and threads.
    public static let defaultMaximumProcesses: UInt64 = 256

    /// The name of the environment variable that turns the sandbox off in the host process when it
    /// is `off` (for debugging; basd and `ba run-extension --no-sandbox` also have their own switch).
    public static let environmentVariable = "BA_EXTENSION_SANDBOX"

    public init(
        isEnabled: Bool = true, readOnlyPaths: [String] = [], readWritePaths: [String] = [],
        maximumProcesses: UInt64 = defaultMaximumProcesses
    ) {
        self.isEnabled = isEnabled
        self.readOnlyPaths = readOnlyPaths
        self.readWritePaths = readWritePaths
        self.maximumProcesses = maximumProcesses
    }

    /// The sandbox on, unless `BA_EXTENSION_SANDBOX=off` is in this process's environment.
    public static var fromEnvironment: BAExtensionSandbox {
        BAExtensionSandbox(isEnabled: ProcessInfo.processInfo.environment[environmentVariable] != "off")
    }

    /// The sandbox off: for debugging only.
    public static let disabled = BAExtensionSandbox(isEnabled: false)
}
