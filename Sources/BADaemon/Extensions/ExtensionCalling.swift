import BACore
import BAExtensionHost
import BAStore

/// Calls of an app's extension, as the services above the ``ExtensionCaller`` make them: the
/// ``EventRouter`` is given one, and a test gives it a fake that answers without a runner.
/// Every method is called on the executor; see ``ExtensionCaller/call(_:libraryPath:event:moreEvents:kind:bypassAllowance:cleanup:callsEnded:countsTowardQuarantine:done:)``
/// for what a call promises.
protocol ExtensionCalling: AnyObject {
    /// Whether runners can be started at all.
    var isAvailable: Bool { get }

    /// Calls `event` (then each of `moreEvents`, in the same runner) of `app`'s extension at
    /// `libraryPath`: `callsEnded` gets the results of the `ok` calls that end while the runner
    /// goes on, and `done` the outcome of the last call made, both later, on the executor.
    func call(
        _ app: StoredApp, libraryPath: String, event: RunnerEvent, moreEvents: [RunnerEvent],
        kind: StoredExtensionRun.Event, bypassAllowance: Bool, cleanup: (@Sendable () -> Void)?,
        callsEnded: (([BAExtensionRunResult]) -> Void)?, countsTowardQuarantine: ((ExtensionCallOutcome) -> Bool)?,
        done: @escaping (ExtensionCallOutcome) -> Void)
}

extension ExtensionCaller: ExtensionCalling {}
