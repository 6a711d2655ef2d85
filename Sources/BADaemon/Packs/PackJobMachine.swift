import BADaemonProtocol
import BAPacks

/// The life of one pack job, without I/O: fetch the index → check it → plan, stage and take what
/// is local → check the space → fetch the rest a window at a time, accepting each unit as it lands
/// → verify and switch → done; or failed, or stopped. Each input returns the actions for the
/// ``PackJob`` to carry out (fetches, staging work on the job's queue, events, the row); an input
/// that comes after the end (a late fetch, a stopped job's callback) returns none.
///
/// `PackJobMachineTests` holds a table of every transition and a seeded random run.
struct PackJobMachine: Sendable {
    enum Phase: Sendable, Hashable {
        case created
        /// The index is being fetched (or read from an earlier attempt) and decoded.
        case fetchingIndex
        /// Planning from the local version, preparing staging and taking local chunks.
        case preparing
        /// Not enough free space for what is left: looked at again later.
        case waitingForSpace(needed: Int64)
        /// Units queued and in flight; each is accepted into staging as it lands.
        case fetching
        /// Every file verified, made read-only and durable, the link switched.
        case finishing
        case done
        case failed(PackFailure)
        case stopped

        var isOver: Bool {
            switch self {
            case .done, .failed, .stopped: true
            default: false
            }
        }
    }

    /// What the plan left to fetch, and the bytes it found (``PackJob/Unit/plan(_:index:)``).
    struct Prepared: Sendable {
        var units: [PackJob.Unit]
        /// The distinct chunks still needed (in ``units``).
        var chunks: Int
        var bytesTotal: Int64
        var bytesPresent: Int64
        var bytesReused: Int64
    }

    /// A fetch that did not deliver.
    struct FetchFailure: Sendable, Hashable {
        var message: String
        var noSpace = false
        var httpStatus: Int?
    }

    enum Input: Sendable {
        case start
        /// The index, fetched (or kept), its SHA-256 the manifest's and decoded within bounds; or why not.
        case indexLoaded(Result<PackIndex, PackFailure>)
        case prepared(Result<Prepared, PackFailure>)
        /// The free bytes where the version is staged (nil: unknown, taken as enough).
        case space(free: Int64?)
        /// Bytes of a unit arrived: `bytes` of it so far (the engine's progress).
        case fetchProgress(String, bytes: Int64, at: ContinuousClock.Instant)
        case fetchFailed(String, FetchFailure)
        /// A unit arrived, its chunks checked and written as they landed; staging now holds `bytesPresent`.
        case accepted(String, bytesPresent: Int64, at: ContinuousClock.Instant)
        case rejected(String, PackError)
        case finished(Result<Void, PackError>)
        case stop
    }

    enum Action: Sendable, Hashable {
        /// Fetch (or read the kept copy of) the index, then answer ``Input/indexLoaded(_:)``.
        case loadIndex
        /// Plan, prepare staging and take local chunks (on the job's queue), then ``Input/prepared(_:)``.
        case prepare(PackIndex)
        /// Measure the free space, then answer ``Input/space(free:)`` (at once, or after
        /// ``PackService/retryInterval`` when `later`).
        case measureSpace(later: Bool)
        /// Fetch the unit straight into staging, then ``Input/accepted(_:bytesPresent:at:)``
        /// (or ``Input/rejected(_:_:)``, ``Input/fetchFailed(_:_:)``).
        case fetch(PackJob.Unit)
        case cancelFetches([String])
        /// Verify and switch (on the job's queue), then ``Input/finished(_:)``.
        case finish
        case send(PackEvent.Kind)
        case log(String)
        /// Record the version as local (the row, the old version's removal).
        case recordLocal
        /// Record the failure in the row.
        case recordFailure(PackFailure)
    }

    let key: PackService.Key
    let version: Int
    /// The manifest's download size: the index may need no more.
    let downloadSize: Int64
    let chunkWindow: Int
    let bundleWindow: Int
    let progressInterval: Duration

    private(set) var phase: Phase = .created
    private(set) var index: PackIndex?
    /// The units to fetch, in order, and the next one to start (a unit to fetch again is
    /// appended: the disk filled up while it was in flight).
    private(set) var units: [PackJob.Unit] = []
    private(set) var next = 0
    /// Units in flight, by key.
    private(set) var inFlight: [String: PackJob.Unit] = [:]
    private(set) var bytesTotal: Int64?
    private(set) var bytesPresent: Int64?
    private(set) var bytesToFetch: Int64?
    private(set) var bytesFetched: Int64 = 0
    private(set) var bytesReused: Int64?
    /// Why it waits, while it waits for space.
    private(set) var waitingFor: WaitingReason?
    /// The bytes of each unit in flight fetched so far, by unit key.
    private(set) var inFlightBytes: [String: Int64] = [:]
    private var lastProgress: ContinuousClock.Instant?
    /// ``bytesShown`` when progress was last sent.
    private var lastShown: Int64 = 0

    init(
        key: PackService.Key, version: Int, downloadSize: Int64, chunkWindow: Int, bundleWindow: Int,
        progressInterval: Duration = .milliseconds(250)
    ) {
        self.key = key
        self.version = version
        self.downloadSize = downloadSize
        self.chunkWindow = max(1, chunkWindow)
        self.bundleWindow = max(1, bundleWindow)
        self.progressInterval = progressInterval
    }

    /// The protocol's code for refused pack metadata (an index or a manifest: `docs/protocol.md`).
    static let invalidMetadataCode = 1102

    mutating func handle(_ input: Input) -> [Action] {
        if phase.isOver { return [] }
        switch (phase, input) {
        case (_, .stop):
            let keys = inFlight.keys.sorted()
            phase = .stopped
            inFlight = [:]
            inFlightBytes = [:]
            return keys.isEmpty ? [] : [.cancelFetches(keys)]
        case (.created, .start):
            phase = .fetchingIndex
            return [.loadIndex]
        case (.fetchingIndex, .indexLoaded(.failure(let failure))):
            return fail(failure)
        case (.fetchingIndex, .indexLoaded(.success(let index))):
            return believe(index)
        case (.preparing, .prepared(.failure(let failure))):
            return fail(failure)
        case (.preparing, .prepared(.success(let prepared))):
            units = prepared.units
            next = 0
            bytesTotal = prepared.bytesTotal
            bytesPresent = prepared.bytesPresent
            bytesReused = prepared.bytesReused
            bytesToFetch = prepared.units.reduce(0) { $0 + $1.bytesToFetch }
            phase = .fetching
            let bundles = prepared.units.filter(\.isBundle).count
            let log = Action.log(
                "version \(version) needs \(prepared.chunks) chunk(s) in \(bundles) bundle(s) and \(prepared.units.count - bundles) single fetch(es), \(bytesToFetch ?? 0) bytes; \(prepared.bytesReused) of \(prepared.bytesTotal) bytes are here already"
            )
            return [log] + (units.isEmpty ? fill() : [.measureSpace(later: false)])
        case (.fetching, .space(let free)), (.waitingForSpace, .space(let free)):
            return spaceMeasured(free)
        case (.fetching, .fetchProgress(let unitKey, let bytes, let now)),
            (.waitingForSpace, .fetchProgress(let unitKey, let bytes, let now)):
            guard let unit = inFlight[unitKey] else { return [] }
            // The engine counts from the unit's start (a resumed bundle begins at `start`).
            inFlightBytes[unitKey] = min(max(0, bytes - unit.start), unit.bytesToFetch)
            return progressIfDue(now)
        case (.fetching, .fetchFailed(let unitKey, let failure)),
            (.waitingForSpace, .fetchFailed(let unitKey, let failure)):
            guard let unit = inFlight.removeValue(forKey: unitKey) else { return [] }
            inFlightBytes[unitKey] = nil
            if failure.noSpace { return waitForSpace(refetch: unit) }
            let missing =
                failure.httpStatus == 404
                ? " (the CDN does not have it: is the publish folder complete? `ba pack verify` it)" : ""
            return fail(PackFailure("\(unit.path) of version \(version): \(failure.message)\(missing)"))
        case (.fetching, .accepted(let unitKey, let present, let now)),
            (.waitingForSpace, .accepted(let unitKey, let present, let now)):
            guard let unit = inFlight.removeValue(forKey: unitKey) else { return [] }
            inFlightBytes[unitKey] = nil
            bytesPresent = present
            bytesFetched += unit.bytesToFetch
            return progressIfDue(now) + (waitingFor == nil ? fill() : [])
        case (.fetching, .rejected(let unitKey, let error)), (.waitingForSpace, .rejected(let unitKey, let error)):
            guard let unit = inFlight.removeValue(forKey: unitKey) else { return [] }
            inFlightBytes[unitKey] = nil
            if error.isNoSpace { return waitForSpace(refetch: unit) }
            if error.code == .badContent {
                return fail(
                    Self.failure(
                        "the CDN served a bad chunk in \(unit.path) for version \(version): \(error); version \(version) is not installed, the local one stays",
                        error))
            }
            return fail(
                Self.failure(
                    "version \(version) could not be assembled from \(unit.path): \(error); the local one stays", error)
            )
        case (.finishing, .finished(.success)):
            phase = .done
            return [
                .recordLocal,
                .log(
                    "version \(version) is local (fetched \(bytesFetched) bytes, reused \(bytesReused ?? 0) of \(bytesTotal ?? 0))"
                ),
                .send(.finished),
            ]
        case (.finishing, .finished(.failure(let error))):
            return fail(Self.failure("version \(version) could not be completed: \(error)", error))
        default:
            // An input this phase does not expect (a late or repeated answer): nothing to do.
            return []
        }
    }

    /// What staging holds and, of each unit in flight, its needed chunks' bytes in proportion to
    /// the bytes of it fetched so far: progress as bytes arrive, not per unit. Never more than
    /// ``bytesTotal``; nil before the plan.
    var bytesShown: Int64? {
        guard let present = bytesPresent else { return nil }
        var arriving: Int64 = 0
        for (key, fetched) in inFlightBytes {
            guard let unit = inFlight[key], unit.bytesToFetch > 0 else { continue }
            let needed = unit.chunks.reduce(Int64(0)) { $0 + Int64($1.0.length) }
            // Both bounded by the index's limits: no overflow in the product.
            arriving +=
                needed.multipliedReportingOverflow(by: fetched).overflow
                ? needed : needed * fetched / unit.bytesToFetch
        }
        return min(present + arriving, bytesTotal ?? .max)
    }

    /// The compressed bytes fetched: of the units accepted, and of those in flight so far.
    var bytesFetchedShown: Int64 { bytesFetched + inFlightBytes.values.reduce(0, +) }

    /// A `progress` event when ``progressInterval`` passed since the last one, or the bytes shown
    /// moved by 1 % of the version or more (and moved at all).
    private mutating func progressIfDue(_ now: ContinuousClock.Instant) -> [Action] {
        let shown = bytesShown ?? 0
        guard shown != lastShown || lastProgress == nil else { return [] }
        let step = max(1, (bytesTotal ?? 0) / 100)
        guard lastProgress.map({ now - $0 >= progressInterval }) ?? true || abs(shown - lastShown) >= step else {
            return []
        }
        lastProgress = now
        lastShown = shown
        return [.send(.progress)]
    }

    /// A failure said as `message`, with the errno and call (or check) of `error`.
    static func failure(_ message: String, _ error: PackError) -> PackFailure {
        PackFailure(message, errno: error.errno?.rawValue, operation: error.operation)
    }

    /// Believes the index only if it names this pack and version and needs no more than the
    /// manifest's download size (its bounds were checked by ``PackIndex/decode(_:)``).
    private mutating func believe(_ index: PackIndex) -> [Action] {
        guard index.id == key.pack, index.version == version else {
            return fail(
                PackFailure(
                    "the index describes \(index.id) version \(index.version), not \(key.pack) version \(version)",
                    code: Self.invalidMetadataCode))
        }
        guard index.downloadSize <= downloadSize else {
            return fail(
                PackFailure(
                    "the index needs \(index.downloadSize) bytes, more than the \(downloadSize) the signed manifest gives: refused",
                    code: Self.invalidMetadataCode))
        }
        self.index = index
        phase = .preparing
        return [.prepare(index)]
    }

    /// The space needed before the next byte: what staging still lacks (units are written
    /// straight into staging, with no copy of their own).
    var spaceNeeded: Int64 {
        next == units.count ? 0 : max(0, (bytesTotal ?? 0) - (bytesPresent ?? 0))
    }

    private mutating func spaceMeasured(_ free: Int64?) -> [Action] {
        let needed = spaceNeeded
        if needed > 0, let free, free < needed {
            var actions: [Action] = []
            if waitingFor != .space {
                actions.append(.log("waiting for \(needed - free) more bytes of free space"))
                actions.append(.send(.paused(.space)))
            }
            waitingFor = .space
            phase = .waitingForSpace(needed: needed)
            return actions + [.measureSpace(later: true)]
        }
        var actions: [Action] = []
        if waitingFor != nil {
            // Going on after a pause is `began` again (Apple's DownloadStatusUpdate).
            waitingFor = nil
            actions.append(.send(.began))
        }
        phase = .fetching
        return actions + fill()
    }

    /// The disk filled up while `unit` was in flight: it is fetched again once there is space.
    private mutating func waitForSpace(refetch unit: PackJob.Unit) -> [Action] {
        units.append(unit)
        var actions: [Action] = []
        if waitingFor != .space {
            actions.append(.log("the disk is full; waiting for space"))
            actions.append(.send(.paused(.space)))
            waitingFor = .space
            phase = .waitingForSpace(needed: spaceNeeded)
            actions.append(.measureSpace(later: true))
        }
        return actions
    }

    /// Starts units until the windows are full (``chunkWindow`` single fetches, ``bundleWindow``
    /// bundles, in order: a bundle waits for a bundle slot, and holds the singles behind it); once
    /// nothing is queued or in flight, finishes.
    private mutating func fill() -> [Action] {
        guard next < units.count || !inFlight.isEmpty else {
            phase = .finishing
            return [.finish]
        }
        var actions: [Action] = []
        var bundles = inFlight.values.filter(\.isBundle).count
        var singles = inFlight.count - bundles
        while next < units.count {
            let unit = units[next]
            if unit.isBundle ? bundles >= bundleWindow : singles >= chunkWindow { break }
            next += 1
            inFlight[unit.key] = unit
            if unit.isBundle { bundles += 1 } else { singles += 1 }
            actions.append(.fetch(unit))
        }
        return actions
    }

    private mutating func fail(_ failure: PackFailure) -> [Action] {
        let keys = inFlight.keys.sorted()
        phase = .failed(failure)
        inFlight = [:]
        inFlightBytes = [:]
        return (keys.isEmpty ? [] : [.cancelFetches(keys)]) + [
            .log(failure.message), .recordFailure(failure), .send(.failed(failure)),
        ]
    }
}
