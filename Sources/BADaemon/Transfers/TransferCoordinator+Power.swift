import BADesktopBus

// What holds transfers back: Low Power Mode, a metered network, no (or captive) connectivity
// (executor). The rules are ``NetworkConditions``'s; this applies them to the window and the engine.
extension TransferCoordinator {
    /// Low Power Mode came (`held`) or went: background transfers pause keeping their bytes and
    /// wait (shown as `waitingFor: "lowPowerMode"`), or go on unless something else holds them.
    /// Foreground and essential ones never wait for it.
    func holdBackground(_ held: Bool) {
        lowPowerMode = held
        applyHolds()
    }

    /// NetworkManager's properties changed (nil: it is not on the system bus).
    func networkChanged(_ properties: [String: BusValue]?) {
        let before = network
        network = NetworkConditions(properties: properties)
        guard network != before else { return }
        log(
            "network: \(network.metered ? "metered" : "not metered"), connectivity \(network.connectivity)"
                + (properties == nil ? " (NetworkManager is not on the system bus)" : " (NetworkManager)"))
        applyHolds()
        // Connectivity back: transfers waiting to retry try again at once.
        if before.connectivity.isRestricted, !network.connectivity.isRestricted {
            perform(window.handle(.networkChanged))
        }
    }

    /// Why background transfers are held now, or nil.
    var backgroundHoldReason: NetworkConditions.Hold? {
        NetworkConditions.backgroundHold(
            network: network, lowPowerMode: lowPowerMode, waitsWhenMetered: settings().waitOnMeteredNetwork)
    }

    /// Why `download` waits now, or nil (listings).
    func hold(of download: NetworkConditions.Transfer) -> NetworkConditions.Hold? {
        NetworkConditions.hold(
            of: download, network: network, lowPowerMode: lowPowerMode,
            backgroundWaitsWhenMetered: settings().waitOnMeteredNetwork)
    }

    /// Applies the holds in force: the window's (and so the engine's) hold on background
    /// transfers, and the engine's on transfers that may not use a metered network. Call when
    /// Low Power Mode, the network or the settings change.
    func applyHolds() {
        let reason = backgroundHoldReason
        let changed = window.backgroundHeld != (reason != nil) || reportedBackgroundHold != reason
        perform(window.handle(.powerModeChanged(held: reason != nil)))
        let meteredChanged = meteredHeld != network.metered
        if meteredChanged {
            meteredHeld = network.metered
            engine.holdMetered(network.metered)
        }
        // First: a pack's consent wait is known before the background hold's change is told.
        if meteredChanged { delegate?.transfers(self, meteredChanged: network.metered) }
        if changed {
            reportedBackgroundHold = reason
            delegate?.transfers(self, backgroundHoldChanged: reason)
        }
    }
}

// The machine's sleep (executor).
extension TransferCoordinator {
    /// The machine is about to sleep (`sleeping`): every transfer stops keeping its bytes, and
    /// `checkpointed` is called (on the engine's thread) once they have. It woke: they go on at
    /// once, waits to retry end, and what waits for the network tries now.
    func machineSleeps(_ sleeping: Bool, checkpointed: @escaping @Sendable () -> Void) {
        engine.suspend(sleeping, done: checkpointed)
        if !sleeping { delegate?.transfersNetworkChanged(self) }
    }
}
