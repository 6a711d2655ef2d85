import BAExtensionHost
import BAExtensionProtocol
import BAStore
import Foundation

/// How an extension call ended, typed end to end: the runner's verdict (with what the call
/// returned), or the reason the host could not run it at all.
enum ExtensionCallOutcome: Sendable {
    /// The runner ran; its verdict and what it returned.
    case ran(BAExtensionRunResult)
    /// The runner could not be started or spoken to.
    case hostError(String)

    var verdict: BAExtensionVerdict? {
        if case .ran(let result) = self { return result.verdict }
        return nil
    }

    var isOK: Bool { verdict == .ok }

    /// The verdict's name (`ok`, `timedOut`, `crashed`, …), or `hostError`.
    var verdictName: String { verdict?.name ?? "hostError" }

    var detail: String? {
        switch self {
        case .ran(let result): result.verdict.detail
        case .hostError(let message): message
        }
    }

    var durationMilliseconds: Int64 {
        guard case .ran(let result) = self else { return 0 }
        return result.duration.components.seconds * 1000
            + result.duration.components.attoseconds / 1_000_000_000_000_000
    }
}

/// The only owner of the extension supervisor: makes every call of an app's extension (content
/// requests and event wake-ups) in a runner, off the executor, and records it (the `extension_run`
/// table, the extension's log lines, the scheduler's bookkeeping) before handing back the outcome.
final class ExtensionCaller: @unchecked Sendable {
    unowned let services: BasdServices
    private var supervisor: BAExtensionSupervisor?

    init(_ services: BasdServices) {
        self.services = services
        supervisor = makeSupervisor(sandboxed: services.settings.current.extensionSandbox)
    }

    /// A supervisor with the sandbox on (as `BA_EXTENSION_SANDBOX` says) or off (the
    /// `extensionSandbox` setting), or nil when runners cannot be started.
    private func makeSupervisor(sandboxed: Bool) -> BAExtensionSupervisor? {
        do {
            return try BAExtensionSupervisor(
                runnerPath: services.configuration.runnerPath, sandbox: sandboxed ? .fromEnvironment : .disabled)
        } catch {
            services.log("extensions cannot be woken: \(error)")
            return nil
        }
    }

    /// Follows the `extensionSandbox` setting (a new supervisor when it changed).
    private func currentSupervisor() -> BAExtensionSupervisor? {
        let sandboxed = services.settings.current.extensionSandbox
        let wanted = sandboxed ? BAExtensionSandbox.fromEnvironment.isEnabled : false
        if let supervisor, supervisor.sandbox.isEnabled != wanted {
            self.supervisor = makeSupervisor(sandboxed: sandboxed)
        }
        return self.supervisor
    }

    /// Whether runners can be started at all.
    var isAvailable: Bool { supervisor != nil }

    /// Calls `event` of `app`'s extension at `libraryPath`; `done` gets the outcome on the
    /// executor, after the call is recorded. `cleanup` runs on the call's thread as soon as the
    /// runner ended (before anything else waits for the executor).
    func call(
        _ app: StoredApp, libraryPath: String, event: RunnerEvent, kind: StoredExtensionRun.Event,
        bypassAllowance: Bool, cleanup: (@Sendable () -> Void)? = nil,
        done: @escaping (ExtensionCallOutcome) -> Void
    ) {
        let startedAt = services.clock.now
        let supervisor = currentSupervisor()
        if let supervisor, !supervisor.sandbox.isEnabled {
            services.log(
                "WARNING: calling the extension of \(app.bundleIdentifier) WITHOUT the sandbox "
                    + "(extensionSandbox is off, or BA_EXTENSION_SANDBOX=off): it can reach the network and every file of the user"
            )
        }
        guard let supervisor else {
            cleanup?()
            let outcome = ExtensionCallOutcome.hostError("basd cannot start extension runners (see its log)")
            finished(app, kind: kind, startedAt: startedAt, outcome: outcome)
            done(outcome)
            return
        }
        let invocation = BAExtensionInvocation(
            libraryPath: libraryPath, event: event,
            timeout: services.scheduler.callTimeout(for: app, bypassAllowance: bypassAllowance),
            appGroupContainerPath: app.appGroupIdentifier.map { services.containers.container(group: $0) },
            currentDownloads: services.transfers.activeRecords(of: app.bundleIdentifier))
        let done = UncheckedSendable(done)
        let thread = Thread { [self] in
            let outcome: ExtensionCallOutcome
            do throws(BAExtensionHostError) {
                outcome = .ran(try supervisor.runBlocking(invocation))
            } catch {
                outcome = .hostError(error.message)
            }
            cleanup?()
            services.executor.async { [self] in
                finished(app, kind: kind, startedAt: startedAt, outcome: outcome)
                done.value(outcome)
            }
        }
        thread.name = "basd-extension-call"
        thread.start()
    }

    /// Records an ended call: its log lines in basd's log, a row in `extension_run`, and its
    /// runtime and verdict in the app's scheduling state.
    private func finished(
        _ app: StoredApp, kind: StoredExtensionRun.Event, startedAt: Date, outcome: ExtensionCallOutcome
    ) {
        if case .ran(let result) = outcome {
            for line in result.logs { services.log("[\(app.bundleIdentifier) extension] \(line.message)") }
        }
        do {
            try store.recordExtensionRun(
                StoredExtensionRun(
                    appIdentifier: app.bundleIdentifier, event: kind, verdict: outcome.verdictName,
                    detail: outcome.detail, startedAt: startedAt, durationMilliseconds: outcome.durationMilliseconds))
        } catch {
            services.log("recording an extension run of \(app.bundleIdentifier) failed: \(error)")
        }
        services.scheduler.extensionRan(app, outcome: outcome)
    }

    private var store: BAStore { services.store }
}

/// A value handed across threads by a caller that knows it is used on one thread at a time (here:
/// created on the executor, called back on the executor).
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
