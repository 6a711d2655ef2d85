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
            for transfer in active.values where !transfer.request.allowsMeteredNetwork {
                // Off the wire keeping every byte written; `start` parks it.
                detach(transfer)
                transfer.machine.pause()
                emit(.paused(id: transfer.id, bytesOnDisk: transfer.bytesOnDisk))
                start(transfer)
            }
            return
        }
        let held = heldForNetwork.values.sorted { $0.sequence < $1.sequence }
        heldForNetwork.removeAll()
        // One cancelled meanwhile is no longer the engine's.
        for transfer in held where transfers[transfer.id] === transfer {
            if transfer.startsAtOnce { start(transfer) } else { enqueue(transfer) }
        }
    }
}

// Cutting a retry's wait short (engine thread).
extension EngineLoop {
    func retryNow(_ id: String?) {
        for (key, transfer) in retrying where id == nil || transfer.id == id {
            guard transfer.machine.retryNow() else { continue }
            retrying[key] = nil
            if transfer.startsAtOnce { start(transfer) } else { enqueue(transfer) }
        }
    }
}
