import BACore
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

@testable import BADaemon
@testable import BAPacks

#if canImport(Glibc)
    import Glibc
#endif

/// `PackJobMachine` without I/O: a table of every transition (each row: inputs that bring the
/// job to a phase, one more input, the phase after it and the actions it returns), and a seeded
/// random run that checks the invariants over thousands of interleavings.
@Suite("pack job state machine")
struct PackJobMachineTests {
    typealias Machine = PackJobMachine
    typealias Action = PackJobMachine.Action
    typealias Input = PackJobMachine.Input
    static let key = PackService.Key(app: "com.example.app", pack: "levels")

    static func chunk(_ letter: Character, stored: Int) -> PackIndex.Chunk {
        PackIndex.Chunk(sha256: String(repeating: letter, count: 64), length: stored * 2, storedLength: stored)
    }

    static let bundle = PackJob.Unit(
        path: "packs/levels/2-0.bundle", size: 100, chunks: [(chunk("a", stored: 100), 0)], isBundle: true,
        key: "bundle-0")
    static let single = PackJob.Unit.single(chunk("b", stored: 10))
    static let other = PackJob.Unit.single(chunk("c", stored: 20))

    static func index(id: String = "levels", version: Int = 2, stored: Int = 130) -> PackIndex {
        PackIndex(
            formatVersion: 1, id: id, version: version, userInfo: nil, downloadPolicy: .onDemand,
            chunking: try! .init(average: 4096),
            files: [
                PackIndex.File(
                    path: "a", size: Int64(stored * 2), mode: 0o644, sha256: String(repeating: "0", count: 64),
                    chunks: [chunk("d", stored: stored)])
            ])
    }

    static func prepared(_ units: [PackJob.Unit]) -> Machine.Prepared {
        Machine.Prepared(units: units, chunks: units.count, bytesTotal: 1000, bytesPresent: 0, bytesReused: 200)
    }

    static let start = ContinuousClock.now
    static let failure = PackFailure("the index is gone")
    static let noSpace = PackError.system("cannot write x", call: "pwrite", errno: ENOSPC)
    static let badFrame = PackError("chunk b arrived with other bytes", code: .badContent)

    /// A machine (windows: one bundle, one single fetch) brought through `inputs`.
    static func machine(_ inputs: [Input]) -> Machine {
        var machine = Machine(key: key, version: 2, downloadSize: 130, chunkWindow: 1, bundleWindow: 1)
        for input in inputs { _ = machine.handle(input) }
        return machine
    }

    static let fetching: [Input] = [
        .start, .indexLoaded(.success(index())), .prepared(.success(prepared([bundle, single, other]))),
        .space(free: nil),
    ]

    struct Row: CustomStringConvertible, Sendable {
        var name: String
        var before: [Input]
        var input: Input
        var phase: Machine.Phase
        var actions: [Action]
        var description: String { name }
    }

    static let rows: [Row] = [
        Row(name: "start", before: [], input: .start, phase: .fetchingIndex, actions: [.loadIndex]),
        Row(
            name: "the index cannot be had", before: [.start], input: .indexLoaded(.failure(failure)),
            phase: .failed(failure),
            actions: [.log(failure.message), .recordFailure(failure), .send(.failed(failure))]),
        Row(
            name: "an index for another pack", before: [.start], input: .indexLoaded(.success(index(id: "other"))),
            phase: .failed(PackFailure("the index describes other version 2, not levels version 2", code: 1102)),
            actions: [
                .log("the index describes other version 2, not levels version 2"),
                .recordFailure(PackFailure("the index describes other version 2, not levels version 2", code: 1102)),
                .send(.failed(PackFailure("the index describes other version 2, not levels version 2", code: 1102))),
            ]),
        Row(
            name: "an index that needs more than the manifest's download size", before: [.start],
            input: .indexLoaded(.success(index(stored: 131))),
            phase: .failed(
                PackFailure(
                    "the index needs 131 bytes, more than the 130 the signed manifest gives: refused", code: 1102)),
            actions: [
                .log("the index needs 131 bytes, more than the 130 the signed manifest gives: refused"),
                .recordFailure(
                    PackFailure(
                        "the index needs 131 bytes, more than the 130 the signed manifest gives: refused", code: 1102)),
                .send(
                    .failed(
                        PackFailure(
                            "the index needs 131 bytes, more than the 130 the signed manifest gives: refused",
                            code: 1102))),
            ]),
        Row(
            name: "the index is believed", before: [.start], input: .indexLoaded(.success(index())),
            phase: .preparing, actions: [.prepare(index())]),
        Row(
            name: "staging cannot be prepared", before: [.start, .indexLoaded(.success(index()))],
            input: .prepared(.failure(failure)), phase: .failed(failure),
            actions: [.log(failure.message), .recordFailure(failure), .send(.failed(failure))]),
        Row(
            name: "everything is local already", before: [.start, .indexLoaded(.success(index()))],
            input: .prepared(.success(prepared([]))), phase: .finishing,
            actions: [
                .log(
                    "version 2 needs 0 chunk(s) in 0 bundle(s) and 0 single fetch(es), 0 bytes; 200 of 1000 bytes are here already"
                ), .finish,
            ]),
        Row(
            name: "units to fetch: the space first", before: [.start, .indexLoaded(.success(index()))],
            input: .prepared(.success(prepared([bundle, single]))), phase: .fetching,
            actions: [
                .log(
                    "version 2 needs 2 chunk(s) in 1 bundle(s) and 1 single fetch(es), 110 bytes; 200 of 1000 bytes are here already"
                ), .measureSpace(later: false),
            ]),
        Row(
            name: "space enough: a bundle and a single fill the windows; the next single waits",
            before: Array(fetching.dropLast()), input: .space(free: 1 << 30), phase: .fetching,
            actions: [.fetch(bundle), .fetch(single)]),
        Row(
            name: "too little space: paused, looked at again later", before: Array(fetching.dropLast()),
            input: .space(free: 10), phase: .waitingForSpace(needed: 1000),
            actions: [
                .log("waiting for 990 more bytes of free space"), .send(.paused(.space)), .measureSpace(later: true),
            ]),
        Row(
            name: "space again: began, then the windows fill",
            before: Array(fetching.dropLast()) + [.space(free: 10)], input: .space(free: 1 << 30), phase: .fetching,
            actions: [.send(.began), .fetch(bundle), .fetch(single)]),
        Row(
            name: "still too little: no second paused event",
            before: Array(fetching.dropLast()) + [.space(free: 10)], input: .space(free: 20),
            phase: .waitingForSpace(needed: 1000), actions: [.measureSpace(later: true)]),
        Row(
            name: "a unit nobody asked for is ignored", before: fetching,
            input: .accepted("nothing", bytesPresent: 20, at: start), phase: .fetching, actions: []),
        Row(
            name: "accepted: progress, and the next single starts", before: fetching,
            input: .accepted(single.key, bytesPresent: 20, at: start), phase: .fetching,
            actions: [.send(.progress), .fetch(other)]),
        Row(
            name: "accepted again within 250 ms, less than 1 % more: no progress event",
            before: fetching + [.accepted(single.key, bytesPresent: 20, at: start)],
            input: .accepted(other.key, bytesPresent: 25, at: start + .milliseconds(100)), phase: .fetching,
            actions: []),
        Row(
            name: "accepted again within 250 ms, 1 % more or over: progress",
            before: fetching + [.accepted(single.key, bytesPresent: 20, at: start)],
            input: .accepted(other.key, bytesPresent: 60, at: start + .milliseconds(100)), phase: .fetching,
            actions: [.send(.progress)]),
        Row(
            name: "bytes of a bundle in flight: progress inside it", before: fetching,
            input: .fetchProgress(bundle.key, bytes: 50, at: start), phase: .fetching, actions: [.send(.progress)]),
        Row(
            name: "more bytes within 250 ms, under 1 %: no progress event",
            before: fetching + [.fetchProgress(bundle.key, bytes: 50, at: start)],
            input: .fetchProgress(bundle.key, bytes: 52, at: start + .milliseconds(50)), phase: .fetching,
            actions: []),
        Row(
            name: "more bytes within 250 ms, 1 % or over: progress",
            before: fetching + [.fetchProgress(bundle.key, bytes: 50, at: start)],
            input: .fetchProgress(bundle.key, bytes: 60, at: start + .milliseconds(50)), phase: .fetching,
            actions: [.send(.progress)]),
        Row(
            name: "more bytes 250 ms later, however few: progress",
            before: fetching + [.fetchProgress(bundle.key, bytes: 50, at: start)],
            input: .fetchProgress(bundle.key, bytes: 51, at: start + .milliseconds(300)), phase: .fetching,
            actions: [.send(.progress)]),
        Row(
            name: "no new bytes: no progress event, however late",
            before: fetching + [.fetchProgress(bundle.key, bytes: 50, at: start)],
            input: .fetchProgress(bundle.key, bytes: 50, at: start + .seconds(5)), phase: .fetching, actions: []),
        Row(
            name: "bytes of a unit not in flight are ignored", before: fetching,
            input: .fetchProgress("nothing", bytes: 50, at: start), phase: .fetching, actions: []),
        Row(
            name: "the disk fills up under a fetch: fetched again once there is space", before: fetching,
            input: .fetchFailed(bundle.key, .init(message: "disk full", noSpace: true)),
            phase: .waitingForSpace(needed: 1000),
            actions: [.log("the disk is full; waiting for space"), .send(.paused(.space)), .measureSpace(later: true)]),
        Row(
            name: "a 404 fails the job and stops the other fetch", before: fetching,
            input: .fetchFailed(bundle.key, .init(message: "HTTP 404", httpStatus: 404)),
            phase: .failed(
                PackFailure(
                    "packs/levels/2-0.bundle of version 2: HTTP 404 (the CDN does not have it: is the publish folder complete? `ba pack verify` it)"
                )),
            actions: [
                .cancelFetches([single.key]),
                .log(
                    "packs/levels/2-0.bundle of version 2: HTTP 404 (the CDN does not have it: is the publish folder complete? `ba pack verify` it)"
                ),
                .recordFailure(
                    PackFailure(
                        "packs/levels/2-0.bundle of version 2: HTTP 404 (the CDN does not have it: is the publish folder complete? `ba pack verify` it)"
                    )),
                .send(
                    .failed(
                        PackFailure(
                            "packs/levels/2-0.bundle of version 2: HTTP 404 (the CDN does not have it: is the publish folder complete? `ba pack verify` it)"
                        ))),
            ]),
        Row(
            name: "the disk fills up while a unit is written: fetched again once there is space", before: fetching,
            input: .rejected(single.key, noSpace), phase: .waitingForSpace(needed: 1000),
            actions: [.log("the disk is full; waiting for space"), .send(.paused(.space)), .measureSpace(later: true)]),
        Row(
            name: "finishing: the last unit accepted",
            before: fetching + [
                .accepted(single.key, bytesPresent: 20, at: start),
                .accepted(other.key, bytesPresent: 60, at: start + .seconds(1)),
            ],
            input: .accepted(bundle.key, bytesPresent: 1000, at: start + .seconds(2)), phase: .finishing,
            actions: [.send(.progress), .finish]),
        Row(
            name: "switched: local",
            before: [.start, .indexLoaded(.success(index())), .prepared(.success(prepared([])))],
            input: .finished(.success(())), phase: .done,
            actions: [
                .recordLocal, .log("version 2 is local (fetched 0 bytes, reused 200 of 1000)"), .send(.finished),
            ]),
        Row(
            name: "stopped with fetches in flight: they are cancelled", before: fetching, input: .stop,
            phase: .stopped, actions: [.cancelFetches([bundle.key, single.key].sorted())]),
        Row(
            name: "stopped while preparing: nothing to cancel", before: [.start, .indexLoaded(.success(index()))],
            input: .stop, phase: .stopped, actions: []),
        Row(
            name: "an answer after the end is dropped", before: fetching + [.stop],
            input: .accepted(single.key, bytesPresent: 20, at: start), phase: .stopped, actions: []),
        Row(
            name: "an answer of another phase is dropped", before: [.start],
            input: .accepted(single.key, bytesPresent: 20, at: start), phase: .fetchingIndex, actions: []),
    ]

    @Test("each transition", arguments: rows)
    func transition(_ row: Row) {
        var machine = Self.machine(row.before)
        let actions = machine.handle(row.input)
        #expect(machine.phase == row.phase, "\(row.name)")
        #expect(actions == row.actions, "\(row.name)")
    }

    @Test("the bytes shown move inside a bundle in proportion to its chunks, and never back at its acceptance")
    func bytesInFlight() {
        // The bundle: 100 bytes fetched for a chunk of 200 (uncompressed).
        var machine = Self.machine(Self.fetching)
        #expect(machine.bytesShown == 0)
        _ = machine.handle(.fetchProgress(Self.bundle.key, bytes: 25, at: Self.start))
        #expect(machine.bytesShown == 50)
        #expect(machine.bytesFetchedShown == 25)
        _ = machine.handle(.fetchProgress(Self.bundle.key, bytes: 100, at: Self.start))
        #expect(machine.bytesShown == 200)
        // A lying engine's count is bounded by the unit's size.
        _ = machine.handle(.fetchProgress(Self.bundle.key, bytes: 1 << 40, at: Self.start))
        #expect(machine.bytesShown == 200)
        _ = machine.handle(.accepted(Self.bundle.key, bytesPresent: 200, at: Self.start))
        #expect(machine.bytesShown == 200)
        #expect(machine.bytesFetchedShown == 100)
        // A failed fetch's bytes no longer count.
        _ = machine.handle(.fetchProgress(Self.single.key, bytes: 5, at: Self.start))
        #expect(machine.bytesShown == 210)
        _ = machine.handle(.stop)
        #expect(machine.bytesShown == 200)
    }

    @Test("a bundle resumed from its first needed frame shows progress from there, not from its start")
    func bytesInFlightOfAResumedBundle() {
        // 100 bytes, its first 60 in staging already (one frame); the needed frame is 40 bytes
        // stored, 80 uncompressed: the engine counts from 60.
        var resumed = PackJob.Unit(
            path: "packs/levels/2-0.bundle", size: 100, chunks: [(Self.chunk("e", stored: 40), 60)], isBundle: true,
            key: "bundle-0")
        resumed.start = 60
        var machine = Self.machine([
            .start, .indexLoaded(.success(Self.index())), .prepared(.success(Self.prepared([resumed]))),
            .space(free: nil),
        ])
        _ = machine.handle(.fetchProgress(resumed.key, bytes: 60, at: Self.start))
        #expect(machine.bytesShown == 0)
        #expect(machine.bytesFetchedShown == 0)
        _ = machine.handle(.fetchProgress(resumed.key, bytes: 80, at: Self.start))
        #expect(machine.bytesShown == 40)
        #expect(machine.bytesFetchedShown == 20)
        _ = machine.handle(.fetchProgress(resumed.key, bytes: 100, at: Self.start))
        #expect(machine.bytesShown == 80)
        #expect(machine.bytesFetchedShown == 40)
    }

    @Test("a bad frame fails the job saying the CDN served it; the local version stays")
    func badContent() {
        var machine = Self.machine(Self.fetching)
        let actions = machine.handle(.rejected(Self.single.key, Self.badFrame))
        guard case .failed(let failure) = machine.phase else {
            Issue.record("\(machine.phase)")
            return
        }
        #expect(failure.message.hasPrefix("the CDN served a bad chunk in \(Self.single.path) for version 2"))
        #expect(failure.message.hasSuffix("the local one stays"))
        #expect(actions.first == .cancelFetches([Self.bundle.key]))
    }

    /// A bundle of ten frames of 100 bytes, and the units that fetch `needed` of them (by number).
    static func units(needing needed: [Int]) -> [PackJob.Unit] {
        let chunks = (0..<10).map { chunk(Character(UnicodeScalar(UInt8(0x61 + $0))), stored: 100) }
        let index = PackIndex(
            formatVersion: 1, id: "levels", version: 2, userInfo: nil, downloadPolicy: .onDemand,
            chunking: try! .init(average: 4096),
            files: [
                PackIndex.File(
                    path: "a", size: 2000, mode: 0o644, sha256: String(repeating: "0", count: 64), chunks: chunks)
            ], bundles: [PackIndex.Bundle(path: "packs/levels/2-0.bundle", size: 1000, chunks: 10)])
        return PackJob.Unit.plan(needed.map { chunks[$0] }, index: index)
    }

    @Test("a bundle is fetched from its first needed frame when 90 % of the rest is needed, else chunk by chunk")
    func unitPlan() {
        let whole = Self.units(needing: Array(0..<10))
        #expect(whole.count == 1 && whole[0].isBundle && whole[0].start == 0 && whole[0].bytesToFetch == 1000)
        // A resume after kill -9: the first four frames are in staging; the rest of the bundle, by Range.
        let rest = Self.units(needing: Array(4..<10))
        #expect(rest.count == 1 && rest[0].isBundle && rest[0].start == 400 && rest[0].bytesToFetch == 600)
        #expect(rest[0].chunks.map(\.1) == [400, 500, 600, 700, 800, 900])
        // A delta: a few frames here and there are fetched one by one.
        let delta = Self.units(needing: [1, 5, 9])
        #expect(delta.count == 3 && delta.allSatisfy { !$0.isBundle && $0.bytesToFetch == 100 })
        // One frame of the ten in staging already: still 90 % of the bundle, fetched whole.
        let gap = Self.units(needing: [0, 1, 2, 3, 4, 6, 7, 8, 9])
        #expect(gap.count == 1 && gap[0].start == 0 && gap[0].bytesToFetch == 1000)
        // Two of the nine from the second on: 700 of 900 bytes, chunk by chunk.
        #expect(Self.units(needing: [1, 2, 3, 5, 6, 7, 9]).count == 7)
    }

    /// Thousands of interleavings: the environment answers fetches (accepted as they land) and space checks
    /// in a random order, sometimes with a full disk, a 404 or a stop. Whatever happens, the
    /// windows hold, no unit is fetched twice at once, the job finishes only once every unit was
    /// accepted, it ends in `done`, `failed` or `stopped`, and says nothing after that.
    @Test("a seeded random run keeps the invariants")
    func seededRandomRun() {
        for seed in UInt64(1)...400 {
            var random = SeededGenerator(state: seed)
            let count = Int.random(in: 0...12, using: &random)
            let units = (0..<count).map { number in
                Bool.random(using: &random)
                    ? PackJob.Unit(
                        path: "packs/levels/2-\(number).bundle", size: Int64.random(in: 1...1000, using: &random),
                        chunks: [], isBundle: true, key: "bundle-\(number)")
                    : PackJob.Unit(
                        path: "chunks/\(number)", size: Int64.random(in: 1...100, using: &random), chunks: [],
                        isBundle: false, key: "chunk-\(number)")
            }
            let chunkWindow = Int.random(in: 1...4, using: &random)
            let bundleWindow = Int.random(in: 1...3, using: &random)
            var machine = Machine(
                key: Self.key, version: 2, downloadSize: 130, chunkWindow: chunkWindow, bundleWindow: bundleWindow)
            var pending: [Input] = []
            var inFlight: Set<String> = []
            var accepted: Set<String> = []
            var finished = false
            var spaceAsked = false
            var now = ContinuousClock.now
            func take(_ actions: [Action]) {
                for action in actions {
                    #expect(!finished, "seed \(seed): \(action) after the end")
                    switch action {
                    case .fetch(let unit):
                        #expect(inFlight.insert(unit.key).inserted, "seed \(seed): \(unit.key) fetched twice at once")
                        let singles = inFlight.filter { !$0.hasPrefix("bundle-") }.count
                        #expect(singles <= chunkWindow && inFlight.count - singles <= bundleWindow, "seed \(seed)")
                        pending.append(.accepted(unit.key, bytesPresent: 0, at: now))
                    case .measureSpace: spaceAsked = true
                    case .finish:
                        #expect(accepted.count == Set(units.map(\.key)).count, "seed \(seed): finished early")
                        #expect(inFlight.isEmpty, "seed \(seed)")
                        pending.append(.finished(.success(())))
                    case .cancelFetches(let keys):
                        for key in keys { inFlight.remove(key) }
                    case .send(.finished), .send(.failed): finished = true
                    case .loadIndex: pending.append(.indexLoaded(.success(Self.index())))
                    case .prepare: pending.append(.prepared(.success(Self.prepared(units))))
                    default: break
                    }
                }
            }
            take(machine.handle(.start))
            for _ in 0..<500 where !machine.phase.isOver {
                now += .milliseconds(Int.random(in: 0...300, using: &random))
                if spaceAsked && Int.random(in: 0..<4, using: &random) == 0 {
                    spaceAsked = false
                    take(machine.handle(.space(free: Bool.random(using: &random) ? nil : 10)))
                    continue
                }
                guard !pending.isEmpty else {
                    if spaceAsked {
                        spaceAsked = false
                        take(machine.handle(.space(free: nil)))
                    }
                    continue
                }
                var input = pending.remove(at: Int.random(in: 0..<pending.count, using: &random))
                switch input {
                case .accepted(let key, _, _):
                    switch Int.random(in: 0..<40, using: &random) {
                    case 0: input = .fetchFailed(key, .init(message: "disk full", noSpace: true))
                    case 1: input = .fetchFailed(key, .init(message: "HTTP 404", httpStatus: 404))
                    case 2: input = .stop
                    case 3: input = .rejected(key, Self.noSpace)
                    default: accepted.insert(key)
                    }
                default: break
                }
                switch input {
                case .fetchFailed(let key, _), .rejected(let key, _), .accepted(let key, _, _): inFlight.remove(key)
                default: break
                }
                take(machine.handle(input))
            }
            #expect(machine.phase.isOver, "seed \(seed): \(machine.phase)")
            if machine.phase == .done {
                #expect(machine.bytesFetched == units.reduce(0) { $0 + $1.size }, "seed \(seed)")
            }
            // Over: every input is dropped.
            #expect(machine.handle(.space(free: nil)).isEmpty && machine.handle(.stop).isEmpty, "seed \(seed)")
        }
    }
}
