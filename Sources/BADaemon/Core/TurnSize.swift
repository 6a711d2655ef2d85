/// How many items one turn of the executor takes on in a bulk job (a listing's page, an
/// uninstall's slice, a batch of engine events), learned from how long the last full turn took,
/// so that a turn holds the executor for about ``target`` on any machine and build: a debug
/// build under load gets small turns, a release build big ones (fewer turns, less overhead).
///
/// A turn's fixed cost (the fsync of its one commit) is left out of what it took: it is paid once
/// per turn whatever its size, so counting it would shrink turns on a slow disk and pay it more
/// often (on a disk whose fsync takes 10 ms, every engine event would cost one).
///
/// Rule (I/O-free; the caller measures): a turn that took longer than ``target`` shrinks the
/// size in proportion (`count × target / elapsed`, at least one step down); a turn that was full
/// and took less than half of ``target`` doubles it; anything else keeps it. The size stays in
/// ``range``. Issue 19: no client waits more than about 50 ms behind bulk work.
struct TurnSize: Equatable {
    /// The sizes allowed.
    let range: ClosedRange<Int>
    /// How long one turn should hold the executor.
    let target: Duration
    /// How many items the next turn takes.
    private(set) var current: Int

    /// The time most bulk turns aim for: two of them plus a short request stay under 50 ms.
    static let defaultTarget = Duration.milliseconds(10)

    init(range: ClosedRange<Int>, start: Int, target: Duration = TurnSize.defaultTarget) {
        self.range = range
        self.target = target
        current = min(max(start, range.lowerBound), range.upperBound)
    }

    /// Learns from a turn that took on `count` items in `elapsed`, of which `fixed` was its fixed
    /// cost (its commit).
    mutating func record(_ count: Int, took elapsed: Duration, fixed: Duration = .zero) {
        let elapsed = max(elapsed - fixed, .zero)
        if elapsed > target {
            let ratio = (target / elapsed)
            let scaled = Int((Double(max(count, 1)) * ratio).rounded(.down))
            current = max(range.lowerBound, min(scaled, current - 1))
        } else if count >= current, elapsed * 2 < target {
            current = min(range.upperBound, current * 2)
        }
    }
}
