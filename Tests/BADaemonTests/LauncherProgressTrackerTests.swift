import Testing

@testable import BADaemon

/// The launcher-progress rules as rows: input at a time → what is sent or armed.
@Suite("Launcher progress rules")
struct LauncherProgressTrackerTests {
    typealias Tracker = LauncherProgressTracker
    typealias Entry = LauncherProgressTracker.Entry

    static func shown(_ progress: Double, _ remaining: Int) -> Entry {
        Entry(progress: progress, remaining: remaining, visible: true, urgent: false)
    }

    /// Feeds `rows` (input, milliseconds since start, the actions expected) in order.
    func run(_ rows: [(Tracker.Input, Int, [Tracker.Action])], sourceLocation: SourceLocation = #_sourceLocation) {
        var tracker = Tracker(interval: .milliseconds(100))
        for (index, (input, at, expected)) in rows.enumerated() {
            let actions = tracker.handle(input, now: .milliseconds(at))
            #expect(actions == expected, "row \(index): \(input)", sourceLocation: sourceLocation)
        }
    }

    @Test("one download: shown at once, at most one update per 100 ms, 1.0 then cleared when it ends")
    func oneDownload() {
        run([
            (.began(app: "a", id: "1", bytes: 0, total: 1000), 0, [.send(app: "a", entry: Self.shown(0, 1))]),
            (
                .progress(app: "a", id: "1", bytes: 100, total: 1000), 10,
                [.flushAfter(app: "a", delay: .milliseconds(90))]
            ),
            (.progress(app: "a", id: "1", bytes: 200, total: 1000), 50, []),
            (.flushDue(app: "a"), 100, [.send(app: "a", entry: Self.shown(0.2, 1))]),
            (.flushDue(app: "a"), 200, []),
            (.progress(app: "a", id: "1", bytes: 500, total: 1000), 300, [.send(app: "a", entry: Self.shown(0.5, 1))]),
            (
                .ended(app: "a", id: "1", failed: false), 310,
                [
                    .send(app: "a", entry: Self.shown(1, 0)),
                    .send(app: "a", entry: Entry(progress: 1, remaining: 0, visible: false, urgent: false)),
                ]
            ),
            // Late events of an ended set change nothing.
            (.progress(app: "a", id: "1", bytes: 900, total: 1000), 400, []),
            (.flushDue(app: "a"), 500, []),
        ])
    }

    @Test("two downloads make one bar, which never goes back; a failure makes the clearing update urgent")
    func twoDownloads() {
        run([
            (.began(app: "a", id: "1", bytes: 50, total: 100), 0, [.send(app: "a", entry: Self.shown(0.5, 1))]),
            // A second, larger one joins: 50 of 1100 bytes, but the bar stays at 0.5.
            (.began(app: "a", id: "2", bytes: 0, total: 1000), 200, [.send(app: "a", entry: Self.shown(0.5, 2))]),
            (.ended(app: "a", id: "1", failed: true), 400, [.send(app: "a", entry: Self.shown(0.5, 1))]),
            (.progress(app: "a", id: "2", bytes: 1000, total: 1000), 600, [.send(app: "a", entry: Self.shown(1, 1))]),
            (
                .ended(app: "a", id: "2", failed: false), 800,
                [
                    .send(app: "a", entry: Self.shown(1, 0)),
                    .send(app: "a", entry: Entry(progress: 1, remaining: 0, visible: false, urgent: true)),
                ]
            ),
            // The next set starts afresh (its updates are not urgent).
            (.began(app: "a", id: "3", bytes: 0, total: nil), 900, [.send(app: "a", entry: Self.shown(0, 1))]),
        ])
    }

    @Test("an app uninstalled mid-download: its entry is cleared at once, at its progress; another app's stays")
    func appGone() {
        run([
            (.began(app: "a", id: "1", bytes: 0, total: 1000), 0, [.send(app: "a", entry: Self.shown(0, 1))]),
            (.began(app: "b", id: "2", bytes: 0, total: 10), 0, [.send(app: "b", entry: Self.shown(0, 1))]),
            (.progress(app: "a", id: "1", bytes: 400, total: 1000), 200, [.send(app: "a", entry: Self.shown(0.4, 1))]),
            (
                .appGone(app: "a"), 210,
                [.send(app: "a", entry: Entry(progress: 0.4, remaining: 0, visible: false, urgent: false))]
            ),
            // Nothing more for it (a late progress, a flush, a second uninstall); b goes on.
            (.progress(app: "a", id: "1", bytes: 500, total: 1000), 400, []),
            (.flushDue(app: "a"), 500, []),
            (.appGone(app: "a"), 600, []),
            (.progress(app: "b", id: "2", bytes: 5, total: 10), 700, [.send(app: "b", entry: Self.shown(0.5, 1))]),
        ])
    }

    @Test("apps are apart; transfers not counted are ignored; without sizes, the share ended")
    func appsApart() {
        run([
            (.progress(app: "a", id: "x", bytes: 5, total: 10), 0, []),
            (.ended(app: "a", id: "x", failed: true), 0, []),
            (.began(app: "a", id: "1", bytes: 0, total: nil), 0, [.send(app: "a", entry: Self.shown(0, 1))]),
            (.began(app: "b", id: "2", bytes: 0, total: nil), 10, [.send(app: "b", entry: Self.shown(0, 1))]),
            (.began(app: "a", id: "3", bytes: 0, total: nil), 20, [.flushAfter(app: "a", delay: .milliseconds(80))]),
            (.ended(app: "a", id: "1", failed: false), 30, []),
            (.flushDue(app: "a"), 100, [.send(app: "a", entry: Self.shown(0.5, 1))]),
        ])
    }
}
