/// What the ``AppInstaller`` asks of the event router below it (``EventRouter`` conforms): the
/// app's extension slot, so a content-request call or an uninstall never overlaps another call
/// of the same app. A test gives the installer a fake that grants the slot at once. Executor only.
protocol InstallerDelivery: AnyObject {
    /// Runs `start` once the app's extension is free, with the id to end the call with
    /// (``contentCallEnded(_:app:)``).
    func requestExtension(for app: String, what: String, start: @escaping (AppDeliveryStateMachine.CallID) -> Void)

    /// The content call `id` of `app` ended: its extension is free again.
    func contentCallEnded(_ id: AppDeliveryStateMachine.CallID, app: String)

    /// The app was uninstalled: forgets its delivery state if nothing waits on it.
    func forget(_ app: String)
}

extension EventRouter: InstallerDelivery {}
