import BAPacks
import Foundation

/// Whether a ``PackJob`` may still switch `AssetPacks/ID` to its version (issue 33): open until
/// the job stops, then closed for good.
///
/// The executor closes it (``PackJob/cancel()``, from `ba packs remove`, an uninstall, a newer
/// version); the job's queue passes it to switch. The lock makes the two exclusive: once
/// ``close()`` returns, a switch is either done (the link is there, for the remover to remove) or
/// never happens. A flag read without it could let a switch that checked just before the close
/// make the link after the remover removed it, and the pack come back (also after a restart,
/// which takes the link as the truth).
final class PackSwitchGate: @unchecked Sendable {
    private let lock = NSLock()
    private var open = true

    /// Closes the gate; waits for a switch that is passing it.
    func close() { lock.withLock { open = false } }

    /// Runs `body` (the switch) if the gate is open, holding it shut meanwhile.
    ///
    /// - Throws: ``PackError`` when the gate is closed (the job stopped), or `body`'s error.
    func pass(_ body: () throws(PackError) -> Void) throws(PackError) {
        lock.lock()
        defer { lock.unlock() }
        guard open else { throw PackError("stopped before the switch") }
        try body()
    }
}
