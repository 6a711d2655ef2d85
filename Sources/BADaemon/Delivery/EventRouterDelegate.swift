import BAStore

/// What the ``EventRouter`` asks of the services above it: the router knows only the services
/// below it (the ``ExtensionCalling`` it wakes extensions through and the ``EventTransfers``
/// its acknowledgements act on). basd's composition root (``BasdServices``) is the delegate and
/// asks the ``PeriodicScheduler``, which keeps the gates of extension calls. Called on the executor.
protocol EventRouterDelegate: AnyObject {
    /// Why the extension of `app` may not be woken for its events now (background activity off,
    /// Low Power Mode, quarantine, allowance used up…), or nil when it may.
    func delivery(_ delivery: EventRouter, refusalToWake app: StoredApp) -> String?
}
