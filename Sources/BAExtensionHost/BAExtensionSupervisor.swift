import BACore
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs extension calls in `ba-extension-runner` child processes, each under a wall-clock
/// deadline and a memory cap, and turns how each ended into a ``BAExtensionVerdict``.
///
/// Nothing the extension returns is trusted: downloads are validated (identifier rules, unique
/// identifiers, URL scheme, sizes, count) and rejected with a reason. The child is spawned in its
/// own process group, and the whole group is killed when the call ends, so nothing it started
/// stays behind.
///
/// ```swift
/// let supervisor = try BAExtensionSupervisor()
/// let result = try await supervisor.run(.contentRequest(.install, libraryPath: "libMyExtension.so",
///                                                       manifestPath: "manifest.json"))
/// print(result.verdict, result.downloads.map(\.identifier))
/// ```
public struct BAExtensionSupervisor: Sendable {
    /// The runner executable.
    public var runnerPath: String
    /// How every call is confined (on by default: ``BAExtensionSandbox``).
    public var sandbox: BAExtensionSandbox
    /// The warm runner calls are forked from, if one is used (see `init`).
    let warm: WarmRunner?

    /// Uses `runnerPath`, or finds the runner: `$BA_EXTENSION_RUNNER`, next to this executable,
    /// then on `PATH`.
    ///
    /// - Parameters:
    ///   - sandbox: how calls are confined; by default the sandbox is on unless
    ///     `BA_EXTENSION_SANDBOX=off` is in the environment. With it off, a warning goes to stderr.
    ///   - warmRunner: fork calls from a warm runner (a zygote started in the background by the
    ///     first call, with Foundation and BackgroundAssets loaded) instead of spawning one per
    ///     call; calls are spawned until it is ready, and whenever it cannot be used. Worth it for a
    ///     host that makes many calls (basd); `BA_EXTENSION_WARM_RUNNER=off` turns it off.
    public init(
        runnerPath: String? = nil, sandbox: BAExtensionSandbox = .fromEnvironment, warmRunner: Bool = true
    ) throws(BAExtensionHostError) {
        self.sandbox = sandbox
        if !sandbox.isEnabled {
            FileHandle.standardError.write(
                Data(
                    "WARNING: the extension sandbox is OFF: extension calls can use the network and read and write every file of this user (for debugging only)\n"
                        .utf8))
        }
        if let runnerPath {
            self.runnerPath = runnerPath
        } else if let found = Self.findRunner() {
            self.runnerPath = found
        } else {
            throw BAExtensionHostError(
                "cannot find ba-extension-runner: set BA_EXTENSION_RUNNER, or install it next to this program or on PATH"
            )
        }
        SupervisedCall.removeOrphanedTemporaryDirectories
        let warmAllowed = ProcessInfo.processInfo.environment["BA_EXTENSION_WARM_RUNNER"] != "off"
        warm = warmRunner && warmAllowed ? WarmRunner(runnerPath: self.runnerPath) : nil
    }

    static func findRunner() -> String? {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["BA_EXTENSION_RUNNER"], !path.isEmpty { return path }
        var candidates: [String] = []
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append((executable as NSString).deletingLastPathComponent + "/ba-extension-runner")
        }
        for directory in (environment["PATH"] ?? "").split(separator: ":") {
            candidates.append("\(directory)/ba-extension-runner")
        }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs one call on a dedicated thread (it blocks in poll), leaving the concurrency pool free.
    public func run(_ invocation: BAExtensionInvocation) async throws(BAExtensionHostError) -> BAExtensionRunResult {
        let outcome: Result<BAExtensionRunResult, BAExtensionHostError> = await withCheckedContinuation {
            continuation in
            let thread = Thread {
                do throws(BAExtensionHostError) {
                    continuation.resume(returning: .success(try runBlocking(invocation)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            thread.name = "ba-extension-supervisor"
            thread.start()
        }
        return try outcome.get()
    }

    /// Runs the invocation's calls on the calling thread and returns the result of the last call
    /// made: the last event's, or that of the first call that did not end `ok` (the events after
    /// it are not called).
    ///
    /// - Parameter callEnded: gets each call's result as soon as it ends, in order, on this
    ///   thread: every `ok` call as it returns (while the runner goes on with the next event), and
    ///   the last call made, once the runner ended (the same result this returns).
    public func runBlocking(
        _ invocation: BAExtensionInvocation, callEnded: (BAExtensionRunResult) -> Void = { _ in }
    ) throws(BAExtensionHostError) -> BAExtensionRunResult {
        var call = try SupervisedCall(runnerPath: runnerPath, invocation: invocation, sandbox: sandbox, warm: warm)
        return call.run(callEnded: callEnded)
    }
}

/// The C ABI version this host speaks.
public enum BAHostABI {
    public static let major = 1
    public static let minor = 2
}
