import BAStore

/// What the ``ExtensionCaller`` asks of and reports to the services above it: the caller knows
/// no other service. basd's composition root (``BasdServices``) is the delegate and hands each
/// question and report to the ``PeriodicScheduler``, which keeps the app's allowance and
/// quarantine. Every method is called on the executor.
protocol ExtensionCallerDelegate: AnyObject {
    /// The deadline of each call of `app`'s extension, and of a runner's calls together (nil
    /// when the allowance is bypassed or does not apply).
    func extensions(
        _ extensions: ExtensionCaller, budgetFor app: StoredApp, bypassAllowance: Bool
    ) -> (perCall: Duration, total: Duration?)

    /// A run of `app`'s extension ended and is recorded: its runtime counts against the app's
    /// allowance, and a failed `outcome` toward quarantine unless `countsTowardQuarantine` is false.
    func extensions(
        _ extensions: ExtensionCaller, ran app: StoredApp, outcome: ExtensionCallOutcome, runtimeMilliseconds: Int64,
        countsTowardQuarantine: Bool)
}
