import BADaemonProtocol
import BAStore

/// A pack job that may be what kills basd does not kill it again (`docs/packs.md`, "A parked
/// pack"): each start that finds a job in flight after an exit without basd's clean shutdown
/// counts (`asset_pack.interrupted_starts`); at ``parkAfter`` in a row the job is parked with a
/// failure that names it, and basd starts and serves every other app and pack. Only a request
/// (`ba packs ensure`, the app's `ensureLocalAvailability`) starts it again.
extension PackService {
    /// Consecutive abnormal exits with a job in flight that park it.
    static let parkAfter = 3
    /// The protocol's code of a parked pack's failure (`docs/protocol.md`, "Errors").
    static let parkedCode = 1110

    /// Parks `key`'s job for `version` instead of resuming it: the staging folder stays (what is
    /// verified in it is kept for the next attempt), the row says why, and a `failed` event tells
    /// whoever listens.
    func park(_ key: Key, row: PackRow, version: Int) {
        var row = row
        let message =
            "version \(version) was being installed when basd stopped abnormally \(row.interruptedStarts) times in a row: parked so that basd serves everyone else; `ba packs ensure \(key.app) \(key.pack)` tries again"
        log("asset pack \(key): \(message)")
        row.target = nil
        row.failure = message
        row.failureCode = Self.parkedCode
        row.interruptedStarts = 0
        save(row)
        send(
            PackEvent(
                .failed(PackFailure(message, code: Self.parkedCode)), appIdentifier: key.app, assetPackID: key.pack,
                version: version))
    }

    /// basd stops cleanly (SIGTERM, idle exit): the jobs in flight were not what ended it, so
    /// their count of abnormal exits goes back to 0; they resume at the next start.
    func shutdown() {
        for key in jobs.keys {
            guard var row = readRow(key), row.interruptedStarts != 0 else { continue }
            row.interruptedStarts = 0
            save(row)
        }
    }
}
