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
