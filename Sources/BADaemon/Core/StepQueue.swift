/// Steps that run one after another, each of which may take several turns of the executor: a
/// step gets a `done` to call when it is over, and the next starts then (executor only).
final class StepQueue {
    private var steps: [(_ done: @escaping () -> Void) -> Void] = []
    private var running = false

    /// Runs `step` after the steps queued before it (at once when none is running).
    func run(_ step: @escaping (_ done: @escaping () -> Void) -> Void) {
        steps.append(step)
        if !running { next() }
    }

    /// Whether a step is running.
    var isBusy: Bool { running }

    private func next() {
        guard !steps.isEmpty else {
            running = false
            return
        }
        running = true
        let step = steps.removeFirst()
        step { [self] in next() }
    }
}
