// Low Power Mode's hold on background transfers (executor).
extension TransferCoordinator {
    /// Holds background transfers (they pause keeping their bytes and wait, shown as
    /// `waitingFor: "lowPowerMode"`), or lets them go on. Foreground and essential ones never wait.
    func holdBackground(_ held: Bool) {
        perform(window.handle(.powerModeChanged(held: held)))
    }
}
