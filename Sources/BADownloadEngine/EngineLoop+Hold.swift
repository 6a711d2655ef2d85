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
