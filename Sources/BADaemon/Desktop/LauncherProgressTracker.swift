/// What the desktop's launcher shows for each app while basd installs its content, and when it
/// may say it again, without I/O (``LauncherProgress`` feeds it and sends what it returns as
/// `com.canonical.Unity.LauncherEntry` `Update` signals).
///
/// The rules:
/// - A transfer counts when the caller says so (an essential download, or any download of an
///   app that is not running). Counted transfers of one app make one progress: the bytes of those
///   with a known size over their sizes (of every one, finished ones included, so the bar never
///   goes back while the set lasts, nor when a transfer joins it); when none has a known size, the
///   share of them that ended.
/// - At most one update per app per ``interval``: a change within it is sent when the interval
///   is over (``Action/flushAfter(app:delay:)``, answered with ``Input/flushDue(app:)``).
/// - When the last counted transfer of an app ends, the launcher gets progress 1.0 at once, then
///   the entry is cleared (`progress-visible` false); `urgent` when one of them failed. The next
///   transfer of the app starts a new set (and takes `urgent` back).
/// - An app uninstalled while its entry shows: the entry is cleared at once, at the progress it
///   had (its transfers did not finish).
struct LauncherProgressTracker: Sendable {
    /// What the launcher is told.
    struct Entry: Equatable, Sendable {
        /// 0 to 1.
        var progress: Double
        /// Counted transfers not ended yet.
        var remaining: Int
        /// Whether the entry is shown (false: cleared).
        var visible: Bool
        /// Whether a counted transfer failed: set on the clearing update, taken back (false) by
        /// every other update, so the next set's first one clears it.
        var urgent: Bool
    }

    enum Input: Equatable, Sendable {
        /// A counted transfer of `app` began (or resumed) with `bytes` of `total` (nil: unknown).
        case began(app: String, id: String, bytes: Int64, total: Int64?)
        /// A counted transfer has `bytes` now; a transfer not counted is ignored.
        case progress(app: String, id: String, bytes: Int64, total: Int64?)
        /// A transfer ended (finished, failed, cancelled); `failed` makes the entry urgent.
        case ended(app: String, id: String, failed: Bool)
        /// The wait of ``Action/flushAfter(app:delay:)`` is over.
        case flushDue(app: String)
        /// The app was uninstalled: its transfers were dropped without ending.
        case appGone(app: String)
    }

    enum Action: Equatable, Sendable {
        /// Send `entry` for `app`.
        case send(app: String, entry: Entry)
        /// Feed ``Input/flushDue(app:)`` after `delay`.
        case flushAfter(app: String, delay: Duration)
    }

    private struct Transfer: Equatable, Sendable {
        var bytes: Int64
        var total: Int64?
        var ended = false
    }

    private struct AppState: Equatable, Sendable {
        var transfers: [String: Transfer] = [:]
        var lastSent: Duration?
        var flushArmed = false
        var changedSinceSent = false
        var failed = false
        /// The progress last sent: the bar never goes back while the set lasts (a transfer that
        /// joins it adds to the sizes).
        var shown: Double = 0
    }

    /// The shortest time between two updates of one app.
    let interval: Duration
    private var apps: [String: AppState] = [:]

    init(interval: Duration = .milliseconds(100)) {
        self.interval = interval
    }

    /// Whether anything is shown or counted for `app`.
    func isTracking(_ app: String) -> Bool { apps[app] != nil }

    /// Whether `id` is a counted transfer of `app`.
    func counts(_ id: String, of app: String) -> Bool { apps[app]?.transfers[id] != nil }

    /// Handles `input` at `now` (a monotonic time, e.g. since basd started).
    mutating func handle(_ input: Input, now: Duration) -> [Action] {
        switch input {
        case .began(let app, let id, let bytes, let total):
            var state = apps[app] ?? AppState()
            let fresh = state.transfers.isEmpty
            state.transfers[id] = Transfer(bytes: bytes, total: total)
            state.changedSinceSent = true
            apps[app] = state
            return fresh ? send(app, now: now) : throttle(app, now: now)
        case .progress(let app, let id, let bytes, let total):
            guard var state = apps[app], var transfer = state.transfers[id], !transfer.ended else { return [] }
            guard transfer.bytes != bytes || transfer.total != total else { return [] }
            transfer.bytes = bytes
            transfer.total = total ?? transfer.total
            state.transfers[id] = transfer
            state.changedSinceSent = true
            apps[app] = state
            return throttle(app, now: now)
        case .ended(let app, let id, let failed):
            guard var state = apps[app], var transfer = state.transfers[id], !transfer.ended else { return [] }
            transfer.ended = true
            if let total = transfer.total { transfer.bytes = total }
            state.transfers[id] = transfer
            state.failed = state.failed || failed
            state.changedSinceSent = true
            apps[app] = state
            guard state.transfers.values.allSatisfy(\.ended) else { return throttle(app, now: now) }
            // The set is over: 1.0 at once, then cleared.
            let done = Entry(progress: 1, remaining: 0, visible: true, urgent: false)
            let cleared = Entry(progress: 1, remaining: 0, visible: false, urgent: state.failed)
            apps[app] = nil
            return [.send(app: app, entry: done), .send(app: app, entry: cleared)]
        case .appGone(let app):
            guard let state = apps[app] else { return [] }
            apps[app] = nil
            return [
                .send(
                    app: app,
                    entry: Entry(
                        progress: max(state.shown, Self.progress(of: state)), remaining: 0, visible: false,
                        urgent: false))
            ]
        case .flushDue(let app):
            guard var state = apps[app] else { return [] }
            state.flushArmed = false
            apps[app] = state
            return state.changedSinceSent ? send(app, now: now) : []
        }
    }

    /// Sends now when the interval since the last update is over, else arms one flush.
    private mutating func throttle(_ app: String, now: Duration) -> [Action] {
        guard var state = apps[app] else { return [] }
        if let last = state.lastSent, now - last < interval {
            guard !state.flushArmed else { return [] }
            state.flushArmed = true
            apps[app] = state
            return [.flushAfter(app: app, delay: interval - (now - last))]
        }
        return send(app, now: now)
    }

    private mutating func send(_ app: String, now: Duration) -> [Action] {
        guard var state = apps[app] else { return [] }
        state.lastSent = now
        state.changedSinceSent = false
        apps[app] = state
        let remaining = state.transfers.values.count { !$0.ended }
        state.shown = max(state.shown, Self.progress(of: state))
        apps[app] = state
        return [
            .send(
                app: app,
                entry: Entry(progress: state.shown, remaining: remaining, visible: true, urgent: false))
        ]
    }

    /// The set's progress: bytes over sizes of those with a known size, else the share ended.
    private static func progress(of state: AppState) -> Double {
        var bytes: Int64 = 0
        var total: Int64 = 0
        for transfer in state.transfers.values {
            guard let size = transfer.total, size > 0 else { continue }
            bytes += min(transfer.bytes, size)
            total += size
        }
        if total > 0 { return Double(bytes) / Double(total) }
        let count = state.transfers.count
        return count == 0 ? 0 : Double(state.transfers.values.count(where: \.ended)) / Double(count)
    }
}
