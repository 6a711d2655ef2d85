import Foundation

// Holding background transfers (Low Power Mode), on the engine thread.
extension EngineLoop {
    func holdBackground(_ held: Bool) {
        backgroundHeld = held
        guard held else { return }  // the loop's next look at the queue starts them again
        for transfer in active.values where !transfer.startsAtOnce {
            // Off the wire keeping every byte written; back in the queue for a ranged resume.
            detach(transfer)
            transfer.machine.pause()
            emit(.paused(id: transfer.id, bytesOnDisk: transfer.bytesOnDisk))
            enqueue(transfer)
        }
    }
}

// Holding transfers that may not use a metered network (engine thread).
extension EngineLoop {
    func holdMetered(_ held: Bool) {
        meteredHeld = held
        if held {
            for transfer in Array(active.values) where !transfer.request.allowsMeteredNetwork {
                // Off the wire keeping every byte written; `start` parks it.
                detach(transfer)
                transfer.machine.pause()
                emit(.paused(id: transfer.id, bytesOnDisk: transfer.bytesOnDisk))
                start(transfer)
            }
            return
        }
        releaseParked()
    }

    /// Whether `transfer` may not start now: the machine is about to sleep, or it may not use
    /// the metered network.
    func mustPark(_ transfer: Transfer) -> Bool {
        suspended || (meteredHeld && !transfer.request.allowsMeteredNetwork)
    }

    /// Starts (or queues) the parked transfers that may go now, in arrival order.
    func releaseParked() {
        let parked = heldForNetwork.values.sorted { $0.sequence < $1.sequence }
        heldForNetwork.removeAll()
        // One cancelled meanwhile is no longer the engine's.
        for transfer in parked where transfers[transfer.id] === transfer {
            if transfer.startsAtOnce { start(transfer) } else { enqueue(transfer) }
        }
    }
}

// Sleep: every transfer checkpointed and parked before the machine suspends (engine thread).
extension EngineLoop {
    func suspend(_ on: Bool, done: @Sendable () -> Void) {
        defer { done() }
        suspended = on
        guard on else {
            releaseParked()
            // After a resume the sockets of waits are dead or the network changed: try now.
            retryNow(nil)
            return
        }
        for transfer in Array(active.values) {
            // Off the wire keeping every byte written, on disk with its validator; `start` parks it.
            detach(transfer)
            transfer.persistValidator()
            if transfer.fd >= 0 { _ = fsync(transfer.fd) }
            transfer.closeFile()
            transfer.machine.pause()
            emit(.paused(id: transfer.id, bytesOnDisk: transfer.bytesOnDisk))
            start(transfer)
        }
    }
}

// Cutting a retry's wait short (engine thread).
extension EngineLoop {
    func retryNow(_ id: String?) {
        if id == nil {
            // The network changed: every server that gave no answer may answer now.
            let now = clock.now()
            for server in gates.keys.sorted() where gates[server] != nil {
                updateGate(server) { gate, _ in gate.networkChanged(now: now) }
            }
        }
        for (key, transfer) in retrying where id == nil || transfer.id == id {
            guard transfer.machine.retryNow() else { continue }
            retrying[key] = nil
            leaveGate(transfer)
            if transfer.startsAtOnce { start(transfer) } else { enqueue(transfer) }
        }
    }
}
