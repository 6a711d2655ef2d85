import Testing

@testable import BADaemon

/// The rule that sizes bulk work's turns of the executor (issue 19: no client waits more than
/// about 50 ms behind it).
@Suite struct TurnSizeTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var current: Int
        var count: Int
        var milliseconds: Int
        var expected: Int
        var why: String
        var testDescription: String { why }
    }

    // Range 10...1000, target 10 ms.
    static let rows: [Row] = [
        Row(current: 100, count: 100, milliseconds: 2, expected: 200, why: "a full, quick turn doubles"),
        Row(current: 100, count: 100, milliseconds: 5, expected: 100, why: "a full turn at half the target keeps"),
        Row(current: 100, count: 100, milliseconds: 10, expected: 100, why: "a full turn on target keeps"),
        Row(current: 100, count: 40, milliseconds: 1, expected: 100, why: "a short turn (the job ended) keeps"),
        Row(current: 100, count: 100, milliseconds: 50, expected: 20, why: "five times too long: a fifth"),
        Row(current: 100, count: 100, milliseconds: 11, expected: 90, why: "a little too long: in proportion"),
        Row(current: 100, count: 100, milliseconds: 10_000, expected: 10, why: "never under the range"),
        Row(current: 800, count: 800, milliseconds: 1, expected: 1000, why: "never over the range"),
        Row(current: 10, count: 10, milliseconds: 500, expected: 10, why: "at the floor it stays"),
        Row(
            current: 100, count: 40, milliseconds: 20, expected: 20, why: "a short slow turn scales by what it took on"),
        Row(current: 100, count: 100, milliseconds: 10_001, expected: 10, why: "far too long: the floor"),
    ]

    @Test(arguments: rows)
    func rule(_ row: Row) {
        var size = TurnSize(range: 10...1000, start: row.current, target: .milliseconds(10))
        size.record(row.count, took: .milliseconds(row.milliseconds))
        #expect(size.current == row.expected)
    }

    @Test("a turn's fixed cost (its commit's fsync) is left out: a slow disk does not shrink turns")
    func fixedCostLeftOut() {
        var size = TurnSize(range: 10...1000, start: 100, target: .milliseconds(10))
        // 4 ms of work and a 30 ms fsync: the work fits; a full, quick turn doubles.
        size.record(100, took: .milliseconds(34), fixed: .milliseconds(30))
        #expect(size.current == 200)
        // The same turn counted whole would have shrunk it to 29.
        var counted = TurnSize(range: 10...1000, start: 100, target: .milliseconds(10))
        counted.record(100, took: .milliseconds(34))
        #expect(counted.current == 29)
    }

    @Test("the start is clamped to the range")
    func clampedStart() {
        #expect(TurnSize(range: 10...1000, start: 5).current == 10)
        #expect(TurnSize(range: 10...1000, start: 5_000).current == 1000)
    }

    @Test("a slow machine settles at the size that fits the target, and a fast one grows to the top")
    func settles() {
        // 0.5 ms per item: 20 items make 10 ms.
        var slow = TurnSize(range: 10...1000, start: 500, target: .milliseconds(10))
        for _ in 0..<5 { slow.record(slow.current, took: .microseconds(500 * slow.current)) }
        #expect(slow.current == 20)
        // 1 µs per item.
        var fast = TurnSize(range: 10...1000, start: 100, target: .milliseconds(10))
        for _ in 0..<5 { fast.record(fast.current, took: .microseconds(fast.current)) }
        #expect(fast.current == 1000)
    }
}
