import BADaemonProtocol
import BAStore
import Foundation

// Uninstalling an app: `ba uninstall`, or basd finding the app's directory gone (executor).
extension AppInstaller {
    /// `uninstallApp`: once the app's extension is free (a running call is waited out, never
    /// killed: it ends within its deadline), cancels the app's downloads, removes its registration
    /// with its downloads, events and runs, and deletes its app group container unless `keepData`
    /// or another registered app shares the group. Idempotent: an app that is not registered gets
    /// a report saying so.
    func uninstall(
        _ bundleIdentifier: String, keepData: Bool, why: String,
        reply: @escaping @Sendable (ServerMessage.Result) -> Void
    ) {
        guard (try? store.app(bundleIdentifier)) != nil else {
            reply(.uninstalled(UninstallReport(bundleIdentifier: bundleIdentifier, wasRegistered: false)))
            return
        }
        delivery.requestExtension(for: bundleIdentifier, what: "uninstall") { [self] callID in
            deleteDownloads(of: bundleIdentifier, cancelled: 0) { [self] cancelled in
                let result: ServerMessage.Result
                do {
                    result = .uninstalled(
                        try removeNow(bundleIdentifier, keepData: keepData, why: why, cancelledBefore: cancelled))
                } catch let error as BAStoreError {
                    result = Refusal(error).result
                } catch {
                    result = Refusal(.internalError, "uninstalling \(bundleIdentifier) failed: \(error)").result
                }
                delivery.contentCallEnded(callID, app: bundleIdentifier)
                delivery.forget(bundleIdentifier)
                reply(result)
            }
        }
    }

    /// Deletes the app's downloads a slice at a time, one transaction and one turn of the
    /// executor each, sized to take about 10 ms (``uninstallSlice``; other clients are served in
    /// between: an app with 10,000 downloads deleted at once held them for more than a second), dropping the transfers of the active ones;
    /// `then` gets how many active ones there were. A store error ends the slices: the app's
    /// removal deletes what is left, or reports the error.
    private func deleteDownloads(
        of bundleIdentifier: String, cancelled: Int, then: @escaping (Int) -> Void
    ) {
        let deleted: Int
        let active: [StoredDownload]
        let started = ContinuousClock.now
        var bodyEnded = started
        let sliceSize = uninstallSlice.current
        do {
            // In a batch of its own only to time its commit, which the slice's size leaves out.
            (deleted, active) = try store.batch("deleting downloads of \(bundleIdentifier)") {
                defer { bodyEnded = .now }
                return try store.deleteDownloads(app: bundleIdentifier, limit: sliceSize)
            }
        } catch {
            log("deleting the downloads of \(bundleIdentifier) failed: \(error)")
            return then(cancelled)
        }
        let committed = ContinuousClock.now
        transfers.drop(active)
        uninstallSlice.record(deleted, took: ContinuousClock.now - started, fixed: committed - bodyEnded)
        let cancelled = cancelled + active.count
        guard deleted == sliceSize else { return then(cancelled) }
        let next = UncheckedSendable(then)
        executor.yielding { [self] in
            deleteDownloads(of: bundleIdentifier, cancelled: cancelled, then: next.value)
        }
    }

    private func removeNow(
        _ bundleIdentifier: String, keepData: Bool, why: String, cancelledBefore: Int
    ) throws -> UninstallReport {
        guard try store.app(bundleIdentifier) != nil else {
            // Removed while this request waited (a second `ba uninstall`).
            return UninstallReport(bundleIdentifier: bundleIdentifier, wasRegistered: false)
        }
        // Those scheduled since the slices deleted the rest.
        let active = try store.activeDownloads(app: bundleIdentifier)
        transfers.drop(active)
        packs.uninstall(bundleIdentifier)
        let app = try store.removeApp(bundleIdentifier)
        manifestRetries[bundleIdentifier] = nil
        delegate?.installer(self, uninstalled: bundleIdentifier)
        let cancelledCount = cancelledBefore + active.count
        var report = UninstallReport(
            bundleIdentifier: bundleIdentifier, wasRegistered: true, version: app.version,
            cancelledDownloads: cancelledCount)
        if let group = app.appGroupIdentifier {
            let container = containers.container(group: group)
            let sharers = try store.apps().filter { $0.appGroupIdentifier == group }.map(\.bundleIdentifier)
            if sharers.isEmpty {
                // basd's own transfer folders of the group (undelivered finished files, partial
                // files): nobody is left to deliver them to, whether or not the container stays.
                try? FileManager.default.removeItem(atPath: containers.transfers(group: group))
                transfers.forgetPreparedGroup(group)
            }
            if keepData {
                report.keptContainer = "--keep-data"
            } else if !sharers.isEmpty {
                report.keptContainer = "app group \(group) is shared with \(sharers.sorted().joined(separator: ", "))"
            } else {
                do {
                    if FileManager.default.fileExists(atPath: container) {
                        try FileManager.default.removeItem(atPath: container)
                    }
                    report.removedContainer = container
                } catch {
                    report.containerError = "could not delete \(container): \(error.localizedDescription)"
                }
            }
        }
        var line = "uninstalled \(bundleIdentifier) \(app.version) (\(why)): \(cancelledCount) download(s) cancelled"
        if let removed = report.removedContainer { line += ", container \(removed) deleted" }
        if let kept = report.keptContainer { line += ", container kept (\(kept))" }
        if let error = report.containerError { line += ", \(error)" }
        log(line)
        return report
    }

    /// Whether the app's directory is gone (`ENOENT` or `ENOTDIR` on the path itself): what a
    /// package removal leaves. Any other failure (permissions, an I/O error) is not taken as gone.
    static func appDirectoryIsGone(_ app: StoredApp) -> Bool {
        var info = stat()
        guard lstat(app.appDirectory, &info) != 0 else { return false }
        return errno == ENOENT || errno == ENOTDIR
    }
}
