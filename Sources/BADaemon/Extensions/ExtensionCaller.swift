import BACore
import BAExtensionHost
import BAScheduling
import BASettings
import BAStore
import Foundation
import Synchronization

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
        return result.duration.milliseconds
    }

    /// Which event of the call's events this outcome is about (0 when the runner never ran).
    var callIndex: Int {
        guard case .ran(let result) = self else { return 0 }
        return result.callIndex
    }
}

extension Duration {
    /// Whole milliseconds.
    var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}

/// The only owner of the extension supervisor: makes every call of an app's extension (content
/// requests and event wake-ups) in a runner, off the executor, and records it (the `extension_run`
/// table, the extension's log lines, the scheduler's bookkeeping) before handing back the outcome.
///
/// It knows no other service: it is given what it needs in
/// ``init(store:containers:configuration:executor:settings:activeDownloads:log:)`` and asks for each
/// call's deadline, and reports each run's end, through its ``delegate``.
final class ExtensionCaller: @unchecked Sendable {
    let store: BAStore
    /// Where each app group's container is (handed to the extension).
    let containers: AppContainers
    /// basd's configuration: the runner's path, the most current downloads a call is handed, the clock.
    let configuration: BasdServices.Configuration
    /// The executor every method runs on (each call's results are posted to it).
    let executor: ServiceExecutor
    /// The settings in force (the `extensionSandbox` setting is read at each call).
    let settings: () -> BasdSettings
    /// An app's oldest active downloads, at most `limit` (the transfer coordinator's, as the
    /// extension sees them).
    let activeDownloads: (_ app: String, _ limit: Int) -> [DownloadDescription]
    let log: @Sendable (String) -> Void
    /// Who sets each call's deadline and is told each run's end (``BasdServices``); weak, as it
    /// owns the caller.
    weak var delegate: (any ExtensionCallerDelegate)?
    private var supervisor: BAExtensionSupervisor?

    /// A caller with a supervisor for the runner at `configuration.runnerPath` (or found next to
    /// basd), sandboxed as the settings say; set ``delegate`` before the first call.
    init(
        store: BAStore, containers: AppContainers, configuration: BasdServices.Configuration,
        executor: ServiceExecutor, settings: @escaping () -> BasdSettings,
        activeDownloads: @escaping (_ app: String, _ limit: Int) -> [DownloadDescription],
        log: @escaping @Sendable (String) -> Void
    ) {
        self.store = store
        self.containers = containers
        self.configuration = configuration
        self.executor = executor
        self.settings = settings
        self.activeDownloads = activeDownloads
        self.log = log
        supervisor = makeSupervisor(sandboxed: settings().extensionSandbox)
    }

    /// A supervisor with the sandbox on (as `BA_EXTENSION_SANDBOX` says) or off (the
    /// `extensionSandbox` setting), or nil when runners cannot be started.
    private func makeSupervisor(sandboxed: Bool) -> BAExtensionSupervisor? {
        do {
            return try BAExtensionSupervisor(
                runnerPath: configuration.runnerPath, sandbox: sandboxed ? .fromEnvironment : .disabled)
        } catch {
            log("extensions cannot be woken: \(error)")
            return nil
        }
    }

    /// Follows the `extensionSandbox` setting (a new supervisor when it changed).
    private func currentSupervisor() -> BAExtensionSupervisor? {
        let sandboxed = settings().extensionSandbox
        let wanted = sandboxed ? BAExtensionSandbox.fromEnvironment.isEnabled : false
        if let supervisor, supervisor.sandbox.isEnabled != wanted {
            self.supervisor = makeSupervisor(sandboxed: sandboxed)
        }
        return self.supervisor
    }

    /// Whether runners can be started at all.
    var isAvailable: Bool { supervisor != nil }

    /// Calls `event` of `app`'s extension at `libraryPath`, then each of `moreEvents` in the same
    /// runner; `done` gets the outcome of the last call made (the last event's, or the first that
    /// did not end `ok`) on the executor, after the run is recorded. `cleanup` runs on the call's
    /// thread as soon as the runner ended (before anything else waits for the executor).
    ///
    /// A runner of several events is one run: it is recorded once, its whole runtime counts
    /// against the app's allowance (which bounds all its calls together), and a crash or timeout
    /// counts once toward quarantine.
    ///
    /// - Parameters:
    ///   - callsEnded: gets, on the executor and in order, the results of the calls that
    ///     returned `ok` while the runner went on with the next event, a few at a time (all that
    ///     ended since the executor last looked); all of them before `done`.
    ///   - countsTowardQuarantine: asked on the executor, before `done`, whether a failed
    ///     outcome counts toward quarantine (nil: it does). The event router says no for a
    ///     repeated failure on the same event: a poisoned event is parked, and counts once.
    func call(
        _ app: StoredApp, libraryPath: String, event: RunnerEvent, moreEvents: [RunnerEvent] = [],
        kind: StoredExtensionRun.Event, bypassAllowance: Bool, cleanup: (@Sendable () -> Void)? = nil,
        callsEnded: (([BAExtensionRunResult]) -> Void)? = nil,
        countsTowardQuarantine: ((ExtensionCallOutcome) -> Bool)? = nil,
        done: @escaping (ExtensionCallOutcome) -> Void
    ) {
        let startedAt = configuration.clock.now
        let supervisor = currentSupervisor()
        if let supervisor, !supervisor.sandbox.isEnabled {
            log(
                "WARNING: calling the extension of \(app.bundleIdentifier) WITHOUT the sandbox "
                    + "(extensionSandbox is off, or BA_EXTENSION_SANDBOX=off): it can reach the network and every file of the user"
            )
        }
        guard let supervisor else {
            cleanup?()
            let outcome = ExtensionCallOutcome.hostError("basd cannot start extension runners (see its log)")
            finished(
                app, kind: kind, startedAt: startedAt, outcome: outcome, runtime: .zero, calls: 1 + moreEvents.count)
            done(outcome)
            return
        }
        let budget =
            delegate?.extensions(self, budgetFor: app, bypassAllowance: bypassAllowance)
            ?? (perCall: .milliseconds(Int64(settings().extensionCallTimeoutSeconds * 1000)), total: nil)
        let invocation = BAExtensionInvocation(
            libraryPath: libraryPath, event: event, timeout: budget.perCall,
            appGroupContainerPath: app.appGroupIdentifier.map { containers.container(group: $0) },
            currentDownloads: currentDownloads(of: app), moreEvents: moreEvents,
            totalTimeout: moreEvents.isEmpty ? nil : budget.total)
        let done = UncheckedSendable(done)
        let countsTowardQuarantine = UncheckedSendable(countsTowardQuarantine)
        // Each call's log lines reach basd's log as the call's result reaches the executor.
        let callsEnded = UncheckedSendable { [self] (results: [BAExtensionRunResult]) in
            for result in results { logLines(of: result, app: app) }
            callsEnded?(results)
        }
        // The results of calls that returned while the runner goes on, until the executor takes them.
        let inbox = Inbox<BAExtensionRunResult>()
        let lastIndex = moreEvents.count
        // The call's thread may outlive the services (an in-process basd torn down mid-call): a
        // stopped executor drops what is posted to it, so nothing reaches a delegate that is gone.
        let executor = self.executor
        let thread = Thread { [self] in
            let outcome: ExtensionCallOutcome
            let runStarted = ContinuousClock.now
            do throws(BAExtensionHostError) {
                outcome = .ran(
                    try supervisor.runBlocking(invocation) { result in
                        guard result.verdict == .ok, result.callIndex < lastIndex else {
                            return
                        }
                        guard inbox.put([result]) else { return }
                        executor.async { callsEnded.value(inbox.take()) }
                    })
            } catch {
                outcome = .hostError(error.message)
            }
            let runtime = ContinuousClock.now - runStarted
            cleanup?()
            executor.async { [self] in
                let late = inbox.take()
                if !late.isEmpty { callsEnded.value(late) }
                finished(
                    app, kind: kind, startedAt: startedAt, outcome: outcome, runtime: runtime,
                    calls: 1 + moreEvents.count, countsTowardQuarantine: countsTowardQuarantine.value?(outcome) ?? true)
                done.value(outcome)
            }
        }
        thread.name = "basd-extension-call"
        thread.start()
    }

    /// Records an ended run: its last call's log lines in basd's log, a row in `extension_run`,
    /// and its runtime and verdict in the app's scheduling state.
    private func finished(
        _ app: StoredApp, kind: StoredExtensionRun.Event, startedAt: Date, outcome: ExtensionCallOutcome,
        runtime: Duration, calls: Int, countsTowardQuarantine: Bool = true
    ) {
        if case .ran(let result) = outcome { logLines(of: result, app: app) }
        var detail = outcome.detail
        if calls > 1 {
            let made = outcome.callIndex + 1
            detail =
                outcome.isOK
                ? "\(calls) events in one runner"
                : "\(detail ?? outcome.verdictName) (event \(made) of \(calls) in one runner; the \(made - 1) before it ok)"
        }
        let milliseconds = calls > 1 ? runtime.milliseconds : outcome.durationMilliseconds
        do {
            try store.recordExtensionRun(
                StoredExtensionRun(
                    appIdentifier: app.bundleIdentifier, event: kind, verdict: outcome.verdictName,
                    detail: detail, startedAt: startedAt, durationMilliseconds: milliseconds))
        } catch {
            log("recording an extension run of \(app.bundleIdentifier) failed: \(error)")
        }
        delegate?.extensions(
            self, ran: app, outcome: outcome, runtimeMilliseconds: milliseconds,
            countsTowardQuarantine: countsTowardQuarantine)
    }

    /// What the extension sees as the app's current downloads: its oldest active ones, at most
    /// ``BasdServices/Configuration/currentDownloadsLimit`` (logged when there are more).
    func currentDownloads(of app: StoredApp) -> [DownloadDescription] {
        let limit = configuration.currentDownloadsLimit
        let records = activeDownloads(app.bundleIdentifier, limit + 1)
        guard records.count > limit else { return records }
        log(
            "\(app.bundleIdentifier) has more than \(limit) active downloads; its extension sees the oldest \(limit)")
        return Array(records.prefix(limit))
    }

    private func logLines(of result: BAExtensionRunResult, app: StoredApp) {
        for line in result.logs { log("[\(app.bundleIdentifier) extension] \(line.message)") }
    }
}

/// A value handed across threads by a caller that knows it is used on one thread at a time (here:
/// created on the executor, called back on the executor).
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
