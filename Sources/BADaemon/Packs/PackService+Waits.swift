import BADaemonProtocol
import BADownloadEngine
import Foundation

// A pack whose server gives no answer (executor): it says it waits, once, and goes on at once
// when the server answers (the engine's ``ServerGate``).
extension PackService {
    /// `server` gives no answer (`waiting`), or answers again (nil): each job fetching from it
    /// is told `paused` (`server`, with the error and the next try) or `began`, and the log
    /// says so, once per change.
    func serverChanged(_ server: String, waiting: TransferCoordinator.ServerWait?) {
        for job in jobs.values.sorted(by: { $0.key.description < $1.key.description })
        where !job.machine.phase.isOver && ServerGate.key(of: job.entry.indexURL) == server {
            if let waiting {
                waitsForServer(job, server: server, waiting)
            } else if job.waitingForServer {
                job.waitingForServer = false
                log("asset pack \(job.key): its server answers again; going on")
                // Going on after a pause is `began` again, unless it still waits for something else.
                if job.waitingFor == nil {
                    send(
                        PackEvent(
                            .began, appIdentifier: job.key.app, assetPackID: job.key.pack, version: job.entry.version))
                }
            }
        }
    }

    /// A job starting while its server gives no answer waits for it from the start.
    func waitsForServerAtStart(_ job: PackJob) {
        guard let waiting = transfers.serverWait(of: job.entry.indexURL),
            let server = ServerGate.key(of: job.entry.indexURL)
        else { return }
        waitsForServer(job, server: server, waiting)
    }

    private func waitsForServer(_ job: PackJob, server: String, _ waiting: TransferCoordinator.ServerWait) {
        guard !job.waitingForServer else { return }
        job.waitingForServer = true
        log(
            "asset pack \(job.key): waiting for its server \(server): \(waiting.reason); it goes on when the server answers"
        )
        var event = PackEvent(
            .paused(.server), appIdentifier: job.key.app, assetPackID: job.key.pack, version: job.entry.version)
        event.waitingError = waiting.reason
        event.nextAttemptAt = waiting.nextAttemptAt.timeIntervalSince1970
        send(event)
    }
}
