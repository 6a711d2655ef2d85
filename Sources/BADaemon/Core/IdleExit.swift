import Foundation

/// When a socket-activated basd started with `--exit-when-idle` exits because it has nothing to
/// do, without I/O (``IdleMonitor`` applies it; `IdleExitTests` holds the table).
///
/// basd is busy while any of these holds (``Activity``): a client is connected (an app, a `ba`
/// command; one being accepted counts), a download is active (running, queued, or waiting for
/// anything: it needs basd to watch the network, the power profile, the disk), an asset pack is
/// being checked or installed, an extension or install has work (a call running, events held back
/// to retry, a manifest fetch to retry, an app registration being installed), or something is due
/// before basd would be started again anyway (``wakeInterval``: `basd.timer` starts it that often).
///
/// The rules:
/// - busy: look again in ``busyLookInterval`` (or ``timeout`` if shorter); the idle time starts over;
/// - idle at a look: the idle time starts then (if it had not), and basd exits once it has been
///   idle for ``timeout`` at a look;
/// - something due within ``wakeInterval`` keeps basd busy until it is done (the run then counts
///   as busy by itself), so nothing is started late by more than what `basd.timer` adds.
///
/// ```
/// busy ─look: idle─▶ idle since T ─look: idle, now ≥ T + timeout─▶ exit
///                    idle since T ─look: busy─▶ busy
/// ```
struct IdleExit: Equatable, Sendable {
    /// What basd has to do, as its services say at a look.
    struct Activity: Equatable, Sendable {
        /// Client connections, open or being accepted.
        var connections = 0
        /// Downloads not ended (running, queued, waiting for anything).
        var activeDownloads = 0
        /// Asset-pack manifest checks and pack installs or updates under way.
        var packWork = 0
        /// An extension call running, events held back to retry, a manifest to fetch again, a
        /// discovered app being installed: what, for the log (empty: nothing).
        var otherWork: [String] = []
        /// The first thing due later (a periodic run, a pack manifest check), or nil.
        var nextDue: Date?
    }

    /// What to do after a look.
    enum Decision: Equatable, Sendable {
        /// Look again after this many seconds.
        case lookAgain(after: TimeInterval)
        /// Exit: basd has been idle this many seconds.
        case exit(idleFor: TimeInterval)
    }

    /// How long basd stays idle before it exits (`--exit-when-idle`).
    var timeout: TimeInterval
    /// How often something starts basd again when it is not running (`basd.timer`): what is due
    /// sooner keeps basd running.
    var wakeInterval: TimeInterval
    /// How often a busy basd looks whether it has become idle.
    var busyLookInterval: TimeInterval = 30
    /// When basd was first seen idle at a look, since it was last busy (nil: busy).
    private(set) var idleSince: Date?

    init(timeout: TimeInterval, wakeInterval: TimeInterval) {
        self.timeout = timeout
        self.wakeInterval = wakeInterval
    }

    /// Why basd is busy (for the log), or nil when it is idle at `now`.
    func busyReason(_ activity: Activity, now: Date) -> String? {
        var reasons: [String] = []
        func count(_ number: Int, _ thing: String) {
            if number > 0 { reasons.append("\(number) \(thing)\(number == 1 ? "" : "s")") }
        }
        count(activity.connections, "client connection")
        count(activity.activeDownloads, "active download")
        count(activity.packWork, "asset-pack job")
        reasons += activity.otherWork
        if let due = activity.nextDue, due.timeIntervalSince(now) < wakeInterval {
            reasons.append("something due in \(Int(max(0, due.timeIntervalSince(now)).rounded(.up))) s")
        }
        return reasons.isEmpty ? nil : reasons.joined(separator: ", ")
    }

    /// One look at what basd has to do at `now`.
    mutating func look(_ activity: Activity, now: Date) -> Decision {
        guard busyReason(activity, now: now) == nil else {
            idleSince = nil
            return .lookAgain(after: min(busyLookInterval, timeout))
        }
        guard let since = idleSince, now >= since else {
            idleSince = now
            return .lookAgain(after: timeout)
        }
        let idle = now.timeIntervalSince(since)
        return idle >= timeout ? .exit(idleFor: idle) : .lookAgain(after: timeout - idle)
    }
}
