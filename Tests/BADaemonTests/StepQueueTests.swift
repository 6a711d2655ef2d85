import Testing

@testable import BADaemon

/// The per-app queue of acknowledgements (issue 19): a step may end turns later, and the next
/// step starts only then, in the order they were queued.
@Suite struct StepQueueTests {
    @Test("steps run in order; one that ends later holds the rest until it calls done")
    func order() {
        let queue = StepQueue()
        var log: [String] = []
        var finishFirst: (() -> Void)?
        queue.run { done in
            log.append("first began")
            finishFirst = done
        }
        queue.run { done in
            log.append("second")
            done()
        }
        #expect(log == ["first began"])
        #expect(queue.isBusy)
        log.append("first ends")
        finishFirst?()
        #expect(log == ["first began", "first ends", "second"])
        #expect(!queue.isBusy)
    }

    @Test("a step queued from inside a step runs after it, and an idle queue runs a step at once")
    func nested() {
        let queue = StepQueue()
        var log: [Int] = []
        queue.run { done in
            queue.run { inner in
                log.append(2)
                inner()
            }
            log.append(1)
            done()
        }
        #expect(log == [1, 2])
        queue.run { done in
            log.append(3)
            done()
        }
        #expect(log == [1, 2, 3])
        #expect(!queue.isBusy)
    }
}
