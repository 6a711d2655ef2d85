import BAStore

/// What the ``PeriodicScheduler`` asks of the transfers (``TransferCoordinator`` conforms).
/// Executor only.
protocol SchedulerTransfers: AnyObject {
    /// Holds background transfers while Low Power Mode is on (or lets them go).
    func holdBackground(_ held: Bool)

    /// What is left of the app's pre-launch download allowances (nil: none applies).
    func remainingAllowances(of app: StoredApp) -> (nonEssential: Int64?, essential: Int64?)
}

extension TransferCoordinator: SchedulerTransfers {}
