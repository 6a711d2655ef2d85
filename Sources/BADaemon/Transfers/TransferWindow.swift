import Foundation

/// Where each download in basd's hands stands between the store and the engine, and the rules of
/// the engine's window, without I/O.
///
/// A download is in one place at a time (``Place``): in the engine (possibly waiting there to
/// retry), out of the engine waiting for disk space, or unstartable. A download in none of them
/// is a row in the store: queued (``parked`` says rows wait there because the window was full) or
/// ended. Keeping queued downloads out of the machine is the point of the window: 100,000 queued
/// downloads cost rows, not entries.
///
/// The rules:
/// - The engine holds ``window`` background downloads; foreground and essential ones go at once
///   (their queue priority is `Int64.max`), as does one that outranks a download the engine
///   already holds. The rest wait in the store while others wait, so the queue order holds.
/// - Once a quarter of the window has ended, the next rows are read from the store in queue order
///   (``Action/readQueue(limit:excluding:)``), skipping every download the machine holds.
/// - A transfer out of space leaves the engine and waits; a look every
///   `spaceRetryInterval` (``Action/armLookAgain``) hands it back once the file system has more
///   than ``spaceMargin`` more room than when it stopped. The same look retries a store that could
///   not be written.
/// - Low Power Mode (or a metered network, or restricted connectivity: ``NetworkConditions``)
///   holds background transfers in the engine (the engine pauses them); listings show why.
/// - A background download waits in the queue (``waitsInQueue(_:now:)``, `waitingFor: "queue"` in
///   listings) while it is a row left in the store (``parked``) or a transfer the engine has not
///   started (its background concurrency is taken; also once a wait to retry is over, as the
///   engine queues it again). Its place: the engine's waiting transfers in the engine's order
///   (``engineQueue(now:)``), then the store's rows in queue order.
///
/// ```
/// (a row) ─scheduled (room, urgent or outranking) / admit / queueRead / promoted─▶ inEngine
/// inEngine ─retrying─▶ inEngine, waiting to retry ─began─▶ inEngine
/// inEngine ─ended (finished, failed)─▶ (an ended row)       inEngine ─unstartable─▶ unstartable
/// inEngine ─outOfSpace─▶ waitingForSpace ─more room / promoted / ba retry─▶ (a row, read) ─admit─▶ inEngine
/// waitingForSpace, unstartable ─cancelled / dropped─▶ (gone); inEngine stays until the engine ends it
/// ```
///
/// ``TransferCoordinator`` feeds it ``Event``s and performs the returned ``Action``s in order
/// (engine calls, store reads, file removals, timers). `docs/architecture.md` has the table;
/// `TransferWindowTests` holds it as rows.
struct TransferWindow: Equatable, Sendable {
    /// A download the window may hand to the engine: its queue priority is what the window compares.
    struct Candidate: Equatable, Sendable {
        var id: String
        var priority: Int64
        /// Foreground or essential: never waits for the window, nor for Low Power Mode.
        var isUrgent: Bool

        /// `Int64.max` for an urgent download, else its priority.
        var queuePriority: Int64 { isUrgent ? .max : priority }
    }

    /// Why a transfer in the engine is not running: the engine waits before trying again.
    struct RetryWait: Equatable, Sendable {
        var reason: String
        /// When the engine tries again (wall clock, as listings show it).
        var until: Date
    }

    /// Where a download in the machine stands.
    enum Place: Equatable, Sendable {
        /// Handed to the engine and not ended, with its queue priority; `retry` while the engine
        /// waits to try again.
        case inEngine(priority: Int64, retry: RetryWait?)
        /// Out of the engine for want of disk space, keeping its partial file, until the file
        /// system has more room than `freeBytesWhenStopped`.
        case waitingForSpace(priority: Int64, freeBytesWhenStopped: Int64)
        /// The engine cannot be given it (logged once): never fetched again while basd runs.
        case unstartable
    }

    enum Event: Equatable, Sendable {
        /// A download was scheduled (or requeued by `ba retry`) and stored: the window decides
        /// whether the engine gets it now or it waits in the store.
        case scheduled(Candidate)
        /// Hand this download to the engine whatever the window (the urgent rows at start, a
        /// download whose wait for space ended and whose row is still active).
        case admit(Candidate)
        /// basd started: the queue waits in the store, and the window fills from it.
        case restarted
        /// The rows asked for by ``Action/readQueue(limit:excluding:)`` (without those already
        /// complete on disk); `exhausted` when the store had fewer than asked for.
        case queueRead([Candidate], exhausted: Bool)
        /// The engine cannot be given this download (``Action/start(_:)`` found no request for it).
        case unstartable(String)
        /// The download was promoted to the foreground (the candidate is its row after that).
        case promoted(Candidate)
        /// `ba retry` of an active download at `now`: try now. A wait to retry ends then (the
        /// engine queues the transfer again: with its slots taken, it waits in the queue).
        case retryRequested(String, now: Date)
        /// The download was cancelled (its row is gone).
        case cancelled(String)
        /// Its app was uninstalled (its row is gone).
        case dropped(String)
        /// The engine started a request for the transfer.
        case began(String)
        /// The engine stopped the transfer's request, keeping its bytes (Low Power Mode, a
        /// metered network, a promotion): it waits in the engine's queue until it begins again.
        case paused(String)
        /// The engine waits before trying the transfer again.
        case retrying(String, RetryWait)
        /// The transfer finished or failed (for any reason but a full disk).
        case ended(String)
        /// The transfer failed for want of disk space; the file system had `freeBytes` then.
        case outOfSpace(String, freeBytes: Int64)
        /// A batch of engine events was handled: the window may take more from the queue.
        case eventsHandled
        /// The store could not record the engine's events: look again later.
        case storeRefused
        /// The look armed by ``Action/armLookAgain`` is due; `storeBlocked` when the store still
        /// refuses the events kept for it (then nothing else is tried).
        case lookAgainDue(storeBlocked: Bool)
        /// The free space measured for ``Action/measureFreeSpace``.
        case freeSpaceMeasured(Int64)
        /// A link, address or route came or went.
        case networkChanged
        /// Background transfers are to be held (Low Power Mode, a metered network, restricted
        /// connectivity: ``NetworkConditions``) or let go.
        case powerModeChanged(held: Bool)
    }

    enum Action: Equatable, Sendable {
        /// Hand the download to the engine; answer ``Event/unstartable(_:)`` when it cannot have a request.
        case start(String)
        /// Read the download's row: if it is still active, feed ``Event/admit(_:)`` (its wait for
        /// space ended).
        case resumeAfterSpaceWait(String)
        /// Tell the engine the transfer is foreground now.
        case promoteInEngine(String)
        /// Tell the engine to end the transfer's wait to retry now, if it has one.
        case retryInEngine(String)
        /// Tell the engine to retry now every transfer waiting to (`count` of them wait).
        case retryAllInEngine(count: Int)
        /// Cancel the engine's transfer (if it has one).
        case stopInEngine(String)
        /// Delete the download's partial file (and its validator).
        case deletePartialFile(String)
        /// Hold (or let go) the engine's background transfers.
        case holdBackground(Bool)
        /// Read up to `limit` active rows in queue order, not those in `excluding`, and answer
        /// ``Event/queueRead(_:exhausted:)``.
        case readQueue(limit: Int, excluding: Set<String>)
        /// Feed ``Event/lookAgainDue(storeBlocked:)`` after `spaceRetryInterval`.
        case armLookAgain
        /// Measure the free space of the transfers' file system and feed ``Event/freeSpaceMeasured(_:)``.
        case measureFreeSpace
    }

    /// More room than this (over what was free when a transfer stopped) is worth another try.
    static let spaceMargin: Int64 = 64 * 1024

    /// How many background downloads the engine holds at most.
    let window: Int
    /// The downloads in the machine, by unique identifier.
    private(set) var places: [String: Place] = [:]
    /// How many of ``places`` are ``Place/inEngine(priority:retry:)``.
    private(set) var inEngineCount = 0
    /// Whether active downloads wait in the store, not handed to the engine (the window was full).
    private(set) var parked = false
    /// Whether background transfers are held (Low Power Mode).
    private(set) var backgroundHeld = false
    /// Whether a look (``Action/armLookAgain``) is armed.
    private(set) var lookAgainArmed = false
    /// The transfers in the engine whose request it started and that have not paused or waited
    /// to retry since; the other background ones wait for its background concurrency.
    private(set) var started: Set<String> = []
    /// The order in which the engine was given each transfer it holds (its tie-break after priority).
    private var admissions: [String: Int] = [:]
    private var nextAdmission = 0

    init(window: Int) {
        self.window = max(1, window)
    }

    /// Where `id` stands; nil for a row in the store (queued or ended).
    func place(of id: String) -> Place? { places[id] }

    /// The queue priorities of the transfers in the engine.
    var inEngine: [String: Int64] {
        places.compactMapValues { place in
            if case .inEngine(let priority, _) = place { return priority }
            return nil
        }
    }

    /// The lowest queue priority in the engine (`Int64.max` when it holds none), without building
    /// ``inEngine``: it is asked for every download scheduled while rows wait.
    private var lowestInEngine: Int64 {
        var lowest = Int64.max
        for case .inEngine(let priority, _) in places.values where priority < lowest { lowest = priority }
        return lowest
    }

    /// Whether `id`, an active download, waits for the background concurrency at `now`: a row
    /// left in the store while the window is full, or a background transfer the engine has not
    /// started (not one waiting to retry until later: that shows as a retry; once the wait is
    /// over the engine queues it again, and it waits here until it begins).
    func waitsInQueue(_ id: String, now: Date) -> Bool {
        switch places[id] {
        case nil: parked
        case .inEngine(let priority, let retry):
            priority != .max && !started.contains(id) && (retry.map { $0.until <= now } ?? true)
        case .waitingForSpace, .unstartable: false
        }
    }

    /// The background transfers in the engine that wait for its background concurrency at `now`
    /// (``waitsInQueue(_:now:)``), in the order the engine starts them: higher priority first,
    /// then the order it was given them. At most ``window`` of them.
    func engineQueue(now: Date) -> [String] {
        places.compactMap { id, place -> (id: String, priority: Int64, admission: Int)? in
            guard case .inEngine(let priority, let retry) = place, priority != .max, !started.contains(id),
                retry.map({ $0.until <= now }) ?? true
            else { return nil }
            return (id, priority, admissions[id] ?? 0)
        }
        .sorted { ($0.priority, $1.admission) > ($1.priority, $0.admission) }
        .map(\.id)
    }

    /// Transfers in the engine waiting to retry.
    var retryWaitCount: Int {
        places.values.count { place in
            if case .inEngine(_, .some) = place { return true }
            return false
        }
    }

    mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .scheduled(let candidate):
            if !candidate.isUrgent && (parked || inEngineCount >= window) {
                let lowest = lowestInEngine
                guard candidate.priority > lowest else {
                    parked = true
                    return []
                }
            }
            return admit(candidate)
        case .admit(let candidate):
            return admit(candidate)
        case .restarted:
            parked = true
            return topUp()
        case .queueRead(let candidates, let exhausted):
            if exhausted { parked = false }
            return candidates.flatMap { admit($0) }
        case .unstartable(let id):
            set(id, .unstartable)
            return []
        case .promoted(let candidate):
            switch places[candidate.id] {
            case .waitingForSpace:
                set(candidate.id, nil)
                return [.resumeAfterSpaceWait(candidate.id)]
            case .inEngine(_, let retry):
                set(candidate.id, .inEngine(priority: .max, retry: retry))
                return [.promoteInEngine(candidate.id)]
            case .unstartable, nil:
                // Still in the store: handed to the engine now, in the foreground.
                return admit(Candidate(id: candidate.id, priority: candidate.priority, isUrgent: true))
            }
        case .retryRequested(let id, let now):
            switch places[id] {
            case .waitingForSpace:
                set(id, nil)
                return [.resumeAfterSpaceWait(id)]
            case .inEngine(let priority, var wait?) where wait.until > now:
                // Over now, its reason kept: the last failure is still said while it waits for a slot.
                wait.until = now
                set(id, .inEngine(priority: priority, retry: wait))
                return [.retryInEngine(id)]
            default:
                return [.retryInEngine(id)]
            }
        case .cancelled(let id):
            // A transfer in the engine counts in the window until the engine says it ended.
            switch places[id] {
            case .inEngine: return [.stopInEngine(id)]
            case .waitingForSpace:
                set(id, nil)
                return [.stopInEngine(id), .deletePartialFile(id)]
            case .unstartable, nil:
                set(id, nil)
                return [.stopInEngine(id)]
            }
        case .dropped(let id):
            if case .inEngine(let priority, _) = places[id] {
                set(id, .inEngine(priority: priority, retry: nil))
            } else {
                set(id, nil)
            }
            return [.stopInEngine(id), .deletePartialFile(id)]
        case .began(let id):
            guard case .inEngine(let priority, let retry) = places[id] else { return [] }
            if retry != nil { set(id, .inEngine(priority: priority, retry: nil)) }
            started.insert(id)
            return []
        case .paused(let id):
            started.remove(id)
            return []
        case .retrying(let id, let wait):
            if case .inEngine(let priority, _) = places[id] { set(id, .inEngine(priority: priority, retry: wait)) }
            started.remove(id)
            return []
        case .ended(let id):
            if case .inEngine = places[id] { set(id, nil) }
            return []
        case .outOfSpace(let id, let free):
            switch places[id] {
            case .inEngine(let priority, _), .waitingForSpace(let priority, _):
                set(id, .waitingForSpace(priority: priority, freeBytesWhenStopped: free))
                return armLookAgain()
            case .unstartable, nil:
                return []
            }
        case .eventsHandled:
            return topUp()
        case .storeRefused:
            return armLookAgain()
        case .lookAgainDue(let storeBlocked):
            lookAgainArmed = false
            if storeBlocked { return armLookAgain() }
            return spaceWaits.isEmpty ? [] : [.measureFreeSpace]
        case .freeSpaceMeasured(let free):
            var actions: [Action] = []
            var waiting = false
            for wait in spaceWaits {
                guard free > wait.freeBytesWhenStopped + Self.spaceMargin else {
                    waiting = true
                    continue
                }
                set(wait.id, nil)
                actions.append(.resumeAfterSpaceWait(wait.id))
            }
            return waiting ? actions + armLookAgain() : actions
        case .networkChanged:
            let count = retryWaitCount
            return count == 0 ? [] : [.retryAllInEngine(count: count)]
        case .powerModeChanged(let held):
            guard held != backgroundHeld else { return [] }
            backgroundHeld = held
            return [.holdBackground(held)]
        }
    }

    /// The transfers waiting for space, highest priority first (then by identifier).
    private var spaceWaits: [(id: String, priority: Int64, freeBytesWhenStopped: Int64)] {
        places.compactMap { id, place -> (id: String, priority: Int64, freeBytesWhenStopped: Int64)? in
            guard case .waitingForSpace(let priority, let free) = place else { return nil }
            return (id, priority, free)
        }
        .sorted { ($0.priority, $1.id) > ($1.priority, $0.id) }
    }

    /// Hands `candidate` to the engine, whatever the window.
    private mutating func admit(_ candidate: Candidate) -> [Action] {
        set(candidate.id, .inEngine(priority: candidate.queuePriority, retry: nil))
        // A new transfer in the engine, which numbers its arrivals the same way.
        started.remove(candidate.id)
        admissions[candidate.id] = nextAdmission
        nextAdmission += 1
        return [.start(candidate.id)]
    }

    /// Once a quarter of the window has ended, reads the next downloads waiting in the store.
    private mutating func topUp() -> [Action] {
        guard parked, inEngineCount <= window - max(1, window / 4) else { return [] }
        return [.readQueue(limit: window - inEngineCount, excluding: Set(places.keys))]
    }

    private mutating func armLookAgain() -> [Action] {
        guard !lookAgainArmed else { return [] }
        lookAgainArmed = true
        return [.armLookAgain]
    }

    /// Moves `id` to `place` (nil: out of the machine), keeping ``inEngineCount``, ``started``
    /// and the admissions.
    private mutating func set(_ id: String, _ place: Place?) {
        if case .inEngine = places[id] { inEngineCount -= 1 }
        if case .inEngine = place {
            inEngineCount += 1
        } else {
            started.remove(id)
            admissions[id] = nil
        }
        places[id] = place
    }
}
