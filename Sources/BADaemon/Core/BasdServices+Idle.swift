import Foundation

extension BasdServices {
    /// What basd has to do now, for ``IdleExit`` (executor): each service says what it holds.
    func idleActivity() -> IdleExit.Activity {
        var activity = IdleExit.Activity()
        activity.connections = connectionCount()
        do {
            activity.activeDownloads = try store.activeDownloadCount()
        } catch {
            // Unknown: as if busy (basd stays rather than leave a download behind).
            activity.otherWork.append("the store could not be read (\(error))")
        }
        activity.packWork = packs.jobs.count + packs.checks.count
        activity.otherWork += delivery.idleBlockers + installer.idleBlockers + discovery.idleBlockers
        activity.nextDue = [
            scheduler.nextPeriodicRun,
            packs.nextManifestCheck(interval: settings.current.periodicMinimumIntervalSeconds),
        ]
        .compactMap { $0 }.min()
        return activity
    }
}

extension EventRouter {
    /// What the extensions have under way that basd must stay for: a call running or waiting,
    /// events held back to try again. (Failed events are routed again by the next basd at start.)
    var idleBlockers: [String] {
        machines.filter(\.value.hasWork).keys.sorted().map { "\($0)'s extension has work" }
    }
}
