// Forgetting an uninstalled app (executor).
extension EventRouter {
    /// Drops the delivery state of an app that is no longer registered: its machine's failure
    /// counts and held-back reason. A machine whose extension slot is taken (a call that queued
    /// behind the uninstall and will find the app gone) is left to end by itself.
    func forget(_ app: String) {
        guard let machine = machines[app], machine.slot == .idle, machine.waitingCalls.isEmpty else { return }
        machines[app] = nil
        lastRunnerEnded[app] = nil
        lastEventFailure[app] = nil
        if acknowledgements[app]?.isBusy == false { acknowledgements[app] = nil }
    }
}

// Events for the CLI only (executor).
extension EventRouter {
    /// Sends a transient event (sequence 0, never stored) to the CLI observers.
    func tellObservers(_ event: WireEvent) {
        send(event, to: observers.values)
    }
}
