import BADaemonProtocol
import BAStore

// Poisoned events: parked, so the app's other events go on to its extension (executor).
extension EventRouter {
    /// Parks the app's event `sequence`, which the extension failed `failures` times: it stays
    /// undelivered for the app's next connection (its delegate is the other consumer), and the
    /// extension is handed the app's later events past it. Said in basd's log, to
    /// `ba events --follow` (the event again, with ``DownloadEvent/parked``) and in listings
    /// (``DownloadInfo/parkedEvent``). When the store cannot record it, the event is tried
    /// again like a new one.
    func park(_ app: String, sequence: Int64, failures: Int) {
        let last = lastEventFailure.removeValue(forKey: app).map { " (last: \($0))" } ?? ""
        let reason =
            "the extension failed \(failures) times handling this event\(last); "
            + "it waits for the app's next connection"
        do {
            guard try store.parkEvent(app: app, sequence: sequence, reason: reason) else { return }
        } catch {
            log("parking event \(sequence) of \(app) failed: \(error)")
            return
        }
        log(
            "the extension of \(app) failed \(failures) times on event \(sequence); parked: it waits for the app's "
                + "next connection, and the extension goes on with the app's later events")
        guard !observers.isEmpty else { return }
        do {
            guard let event = try store.event(sequence: sequence) else { return }
            let wire = try wireEvent(event, forApp: false)
            send(wire, to: observers.values)
        } catch {
            log("telling the event followers that event \(sequence) of \(app) is parked failed: \(error)")
        }
    }

    /// Why each download of `downloads` has a parked event, if it has one (for listings). An
    /// error reads as none: a listing is not refused for it.
    func parkedReasons(of downloads: [StoredDownload]) -> [String: String] {
        let ids = downloads.map(\.uniqueIdentifier)
        guard let parked = try? store.parkedEvents(downloads: ids) else { return [:] }
        return parked.compactMapValues { events in
            events.first.map { "\($0.kind.rawValue) event \($0.sequence) parked: \($0.parkedReason ?? "")" }
        }
    }
}
