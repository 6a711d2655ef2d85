import BAStore

// The extension caller's questions and reports: the scheduler keeps each app's allowance and quarantine.
extension BasdServices: ExtensionCallerDelegate {
    func extensions(
        _ extensions: ExtensionCaller, budgetFor app: StoredApp, bypassAllowance: Bool
    ) -> (perCall: Duration, total: Duration?) {
        scheduler.callBudget(for: app, bypassAllowance: bypassAllowance)
    }

    func extensions(
        _ extensions: ExtensionCaller, ran app: StoredApp, outcome: ExtensionCallOutcome, runtimeMilliseconds: Int64,
        countsTowardQuarantine: Bool
    ) {
        scheduler.extensionRan(
            app, outcome: outcome, runtimeMilliseconds: runtimeMilliseconds,
            countsTowardQuarantine: countsTowardQuarantine)
    }
}
