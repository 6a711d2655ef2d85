import BACore
internal import CCurl
import Foundation
import HeapModule
import Synchronization

/// Downloads files with libcurl's multi interface on one thread that owns every handle.
///
/// Other threads post commands (add, promote, cancel, respond) and wake the thread with
/// `curl_multi_wakeup`; events leave through ``events``. Background transfers run in priority
/// order (priority, then arrival) with bounded concurrency; foreground and essential transfers
/// start at once, outside that bound. An idle engine sleeps until a command arrives.
///
/// ```swift
/// let engine = DownloadEngine()
/// engine.add(DownloadRequest(id: "catalog", url: "https://cdn.example.com/catalog.json",
///                            destination: "/tmp/catalog.json", expectedSize: 2048))
/// for await event in engine.events {
///     if case .finished(let id, let path, _, _, _) = event { print(id, path) }
/// }
/// ```
package final class DownloadEngine: Sendable {
    /// Engine-wide settings.
    package struct Configuration: Sendable {
        /// Background transfers running at once.
        package var backgroundConcurrency: Int = 4
        package var backgroundRetry: RetryPolicy = .background
        package var foregroundRetry: RetryPolicy = .foreground
        /// A running transfer that receives nothing for this long (engine clock) is stalled: it is
        /// taken off the wire and retried from its partial file.
        package var stallTimeout: Duration = .seconds(30)
        package var connectTimeout: Duration = .seconds(20)
        /// libcurl's receive buffer per transfer.
        package var bufferSize: Int = 512 * 1024
        /// fsync each finished file before renaming it into place, so a power loss never leaves
        /// a renamed file without its bytes (writeback starts every 8 MiB during the download, so
        /// the final fsync is short). Off for tools that, like curl, leave that to the kernel.
        package var durable: Bool = true
        /// The `User-Agent` sent with every request (a request's own header wins); nil sends none.
        package var userAgent: String?
        /// How a server that gives no answer is tried again (``ServerGate``): for work someone
        /// waits for (foreground, essential), and for the rest.
        package var serverProbeUrgent: ServerGate.Schedule = .urgent
        package var serverProbeBackground: ServerGate.Schedule = .background
        /// libcurl's own trace of every request (`CURLOPT_VERBOSE`) on standard error: for
        /// debugging a server or a proxy (`basd --log-level debug`).
        package var verbose = false
        package init() {}
    }

    enum Command: Sendable {
        case add(DownloadRequest)
        case promote(String)
        case cancel(String)
        case respond(String, ChallengeResponse)
        case liftRestrictions(String)
        case setBackgroundConcurrency(Int)
        case holdBackground(Bool)
        case holdMetered(Bool)
        case suspend(Bool, done: @Sendable () -> Void)
        case retryNow(String?)
        case shutdown
    }

    /// Everything that happens, in order per transfer. The engine thread hands them over a turn
    /// at a time (``DownloadEvents/batches``): one wake-up of the consumer for all the events of
    /// a turn, not one per event.
    package let events: DownloadEvents
    private let continuation: AsyncStream<[DownloadEvent]>.Continuation
    private let commands = CommandQueue()
    private let multiAddress: UInt
    private let finished = DispatchSemaphore(value: 0)
    private let stopped = Mutex(false)

    /// Starts the engine thread.
    package init(configuration: Configuration = Configuration(), clock: any EngineClock = SystemEngineClock()) {
        _ = CurlGlobal.initialized
        let (batches, continuation) = AsyncStream.makeStream(of: [DownloadEvent].self, bufferingPolicy: .unbounded)
        events = DownloadEvents(batches: batches)
        self.continuation = continuation
        let multi = curl_multi_init()
        multiAddress = UInt(bitPattern: multi)
        let loop = EngineLoop(
            multi: multi, configuration: configuration, clock: clock, continuation: continuation,
            takeCommands: { [commands] in commands.takeAll() })
        let thread = Thread { [finished] in
            loop.run()
            finished.signal()
        }
        thread.name = "ba-download-engine"
        thread.start()
    }

    deinit { shutdown() }

    private func post(_ command: Command) {
        commands.append(command)
        wake()
    }

    /// Queues a download (started at once if foreground or essential).
    package func add(_ request: DownloadRequest) { post(.add(request)) }

    /// Moves a queued or running background download to the foreground, keeping its bytes:
    /// a running one is paused (``DownloadEvent/paused(id:bytesOnDisk:)``) and resumed with a
    /// ranged request (``DownloadEvent/began(id:offset:isForeground:)``).
    package func promote(_ id: String) { post(.promote(id)) }

    /// Cancels a download; its partial file is removed.
    package func cancel(_ id: String) { post(.cancel(id)) }

    /// Answers a ``DownloadEvent/needsCredentials(id:challenge:)``.
    package func respond(to id: String, with response: ChallengeResponse) { post(.respond(id, response)) }

    /// Drops a download's ``DownloadRequest/byteLimit`` and ``DownloadRequest/allowList`` (the app's
    /// first launch lifts its pre-launch restrictions), keeping its bytes: a running request goes on
    /// with no limit from its next byte, and later redirect hops are checked against the URL rules only.
    package func liftRestrictions(_ id: String) { post(.liftRestrictions(id)) }

    /// Changes how many background transfers run at once.
    package func setBackgroundConcurrency(_ count: Int) { post(.setBackgroundConcurrency(max(1, count))) }

    /// Holds background transfers (Low Power Mode) or lets them go again. Held, running background
    /// transfers pause keeping every byte (event `paused`) and wait in the queue with the others;
    /// foreground and essential transfers go on. Let go, they resume with ranged requests.
    package func holdBackground(_ held: Bool) { post(.holdBackground(held)) }

    /// Holds the transfers whose request does not allow a metered network
    /// (``DownloadRequest/allowsMeteredNetwork`` false), whatever their kind, or lets them go.
    /// Held, a running one pauses keeping every byte (event `paused`); one that would start waits
    /// without a request. Let go, they start (or queue) again and resume with ranged requests.
    package func holdMetered(_ held: Bool) { post(.holdMetered(held)) }

    /// Before the machine sleeps (`on`): every running transfer stops keeping its bytes (its
    /// partial file synced, its validator saved; event `paused`) and none starts until the
    /// resume; `done` is called on the engine thread once that is so (the caller then lets the
    /// machine sleep). After it (`on` false): they start again at once, and every wait to retry
    /// ends (its connection is gone, the network may have changed).
    package func suspend(_ on: Bool, done: @escaping @Sendable () -> Void = {}) { post(.suspend(on, done: done)) }

    /// Ends the wait of a transfer waiting to retry (`id`), or of every one (nil: the network
    /// changed): it starts now (or queues, if a background slot is not free).
    package func retryNow(_ id: String?) { post(.retryNow(id)) }

    /// Wakes the engine thread (after advancing a ``ManualEngineClock``).
    package func wake() {
        curl_multi_wakeup(UnsafeMutableRawPointer(bitPattern: multiAddress))
    }

    /// Stops the thread; running transfers stop with their partial files kept for a resume.
    /// Ends ``events``. Safe to call more than once.
    package func shutdown() {
        let already = stopped.withLock { value in
            defer { value = true }
            return value
        }
        guard !already else { return }
        post(.shutdown)
        finished.wait()
    }
}

/// Commands posted by other threads for the engine thread.
final class CommandQueue: Sendable {
    private let list = Mutex<[DownloadEngine.Command]>([])
    func append(_ command: DownloadEngine.Command) { list.withLock { $0.append(command) } }
    func takeAll() -> [DownloadEngine.Command] {
        list.withLock { commands in
            defer { commands.removeAll() }
            return commands
        }
    }
}

/// The engine thread's state. Only that thread touches it.
final class EngineLoop: @unchecked Sendable {
    let multi: UnsafeMutableRawPointer?
    var configuration: DownloadEngine.Configuration
    let clock: any EngineClock
    let continuation: AsyncStream<[DownloadEvent]>.Continuation
    /// Events of this turn, handed over together before the thread sleeps.
    var pendingEvents: [DownloadEvent] = []
    let takeCommands: @Sendable () -> [DownloadEngine.Command]

    var transfers: [String: Transfer] = [:]
    /// Background transfers waiting for a slot, most urgent first. Entries whose transfer is no
    /// longer queued (promoted, cancelled) are skipped when they come up.
    var queue = Heap<QueueEntry>()
    /// Transfers with a request on the wire.
    var active: [ObjectIdentifier: Transfer] = [:]
    /// Transfers waiting for a retry time.
    var retrying: [ObjectIdentifier: Transfer] = [:]
    /// The same transfers by due time, soonest first, so neither a loop turn nor the poll timeout
    /// walks them all (thousands wait while offline). An entry whose transfer left ``retrying``
    /// or got another due time is skipped when it comes up.
    var retryTimes = Heap<RetryEntry>()
    /// Background transfers are held (``DownloadEngine/holdBackground(_:)``).
    var backgroundHeld = false
    /// Transfers that may not use a metered network are held (``DownloadEngine/holdMetered(_:)``).
    var meteredHeld = false
    /// The machine is about to sleep: no transfer starts (``DownloadEngine/suspend(_:done:)``).
    var suspended = false
    /// Transfers parked (the network is metered and they may not use it, or the machine sleeps),
    /// off the queue, by id.
    var heldForNetwork: [String: Transfer] = [:]
    /// Destination and partial paths in use, to the transfer id using them.
    var destinations: [String: String] = [:]
    /// libcurl's error text of each easy handle in use (`CURLOPT_ERRORBUFFER`, `CURL_ERROR_SIZE`
    /// bytes), freed with the handle: it says what `curl_easy_strerror` cannot ("no alternative
    /// certificate subject name matches target host name …").
    var errorBuffers: [ObjectIdentifier: UnsafeMutablePointer<CChar>] = [:]
    /// Servers that gave no answer, by ``ServerGate/key(of:)``: their failed transfers wait there.
    var gates: [String: ServerGate] = [:]
    /// The server whose gate each transfer waits at (or probes).
    var gateOf: [ObjectIdentifier: String] = [:]
    /// The gates' next probes, soonest first (an entry whose gate opened or moved is skipped).
    var gateTimes = Heap<GateTime>()
    /// Transfers whose response head arrived this turn while some server is down (the gates
    /// open after libcurl's callbacks: no handle is added from within one).
    var answers: [Transfer] = []
    var sequence = 0
    var running = true
    var random = SystemRandomNumberGenerator()

    init(
        multi: UnsafeMutableRawPointer?, configuration: DownloadEngine.Configuration, clock: any EngineClock,
        continuation: AsyncStream<[DownloadEvent]>.Continuation,
        takeCommands: @escaping @Sendable () -> [DownloadEngine.Command]
    ) {
        self.multi = multi
        self.configuration = configuration
        self.clock = clock
        self.continuation = continuation
        self.takeCommands = takeCommands
    }

    func emit(_ event: DownloadEvent) { pendingEvents.append(event) }

    /// Hands this turn's events to the consumer.
    func flushEvents() {
        guard !pendingEvents.isEmpty else { return }
        continuation.yield(pendingEvents)
        pendingEvents.removeAll(keepingCapacity: true)
    }

    func run() {
        while running {
            for command in takeCommands() { handle(command) }
            guard running else { break }
            startDueTransfers()
            var active: Int32 = 0
            curl_multi_perform(multi, &active)
            // Before the ended requests: one that got an answer this turn keeps its own backoff.
            openAnsweredGates()
            drainMessages()
            detectStalls()
            flushProgress()
            startDueTransfers()
            let timeout = pollTimeout()
            flushEvents()
            curl_multi_poll(multi, nil, 0, timeout, nil)
        }
        for transfer in transfers.values {
            detach(transfer)
            transfer.persistValidator()
            transfer.closeFile()
        }
        transfers.removeAll()
        curl_multi_cleanup(multi)
        flushEvents()
        continuation.finish()
    }

    /// How long to sleep: until libcurl's next timer or the next retry, and indefinitely (an
    /// hour) when there is nothing to do.
    func pollTimeout() -> Int32 {
        var timeout: Int = 3_600_000
        var curlTimeout: Int = -1
        curl_multi_timeout(multi, &curlTimeout)
        if curlTimeout >= 0 { timeout = min(timeout, curlTimeout) }
        let now = clock.now()
        dropStaleRetryTimes()
        if let next = retryTimes.min {
            timeout = min(timeout, max(0, Int(milliseconds(next.until - now)) + 1))
        }
        dropStaleGateTimes()
        if let next = gateTimes.min { timeout = min(timeout, max(0, Int(milliseconds(next.until - now)) + 1)) }
        let realNow = ContinuousClock.now
        for transfer in active.values {
            let stallAt = transfer.lastActivity + configuration.stallTimeout
            timeout = min(timeout, max(0, Int(milliseconds(stallAt - now)) + 1))
            if transfer.bytesOnDisk != transfer.reportedBytes && transfer.bytesOnDisk > 0,
                let last = transfer.lastProgress
            {
                timeout = min(timeout, max(0, Int(milliseconds(Self.progressInterval - (realNow - last))) + 1))
            }
        }
        return Int32(clamping: timeout)
    }

    /// Takes transfers that received nothing for `stallTimeout` off the wire and retries them.
    func detectStalls() {
        let now = clock.now()
        // Collected first (detach changes `active`); usually empty, so nothing is allocated.
        let stalled = active.values.filter { now - $0.lastActivity >= configuration.stallTimeout }
        for transfer in stalled {
            let answered = transfer.decision != nil
            detach(transfer)
            emitProgress(transfer, force: true)
            let policy = transfer.machine.isForeground ? configuration.foregroundRetry : configuration.backgroundRetry
            let reason =
                "\(transfer.machine.currentURL): no data for \(LogDuration.text(configuration.stallTimeout))"
                + transfer.requestBytesText
            ended(
                transfer,
                transfer.machine.requestEnded(
                    .retryable(reason: reason, retryAfter: nil, isConnectivity: false), policy: policy, now: now,
                    random: Double.random(in: 0..<1, using: &random), bytesOnDisk: transfer.bytesOnDisk,
                    validator: transfer.validator),
                answered: answered)
        }
    }

    func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    // MARK: Commands

    func handle(_ command: DownloadEngine.Command) {
        switch command {
        case .add(let request):
            guard multi != nil else {
                emit(
                    .failed(
                        id: request.id,
                        error: DownloadError(.network, "libcurl could not be initialized (curl_multi_init failed)")))
                return
            }
            if let other = destinations[request.destination] ?? destinations[request.partialPath] {
                // Two writers of one partial file would interleave their bytes.
                emit(
                    .failed(
                        id: request.id,
                        error: DownloadError(
                            .fileSystem,
                            "\(request.destination) is already the destination of download '\(other)'")))
                return
            }
            if request.sink != nil, (request.expectedSize ?? -1) < 0 {
                emit(
                    .failed(
                        id: request.id,
                        error: DownloadError(
                            .protocolViolation, "a content-addressed download ('\(request.id)') needs its size")))
                return
            }
            guard transfers[request.id] == nil else {
                emit(
                    .failed(
                        id: request.id,
                        error: DownloadError(
                            .protocolViolation, "a download with id '\(request.id)' is already in the engine")))
                return
            }
            sequence += 1
            let transfer = Transfer(request: request, sequence: sequence)
            transfer.loop = self
            transfer.durable = configuration.durable && request.durable
            transfers[request.id] = transfer
            destinations[request.destination] = request.id
            destinations[request.partialPath] = request.id
            // The partial file is opened when the transfer starts, not here: a queued transfer
            // holds no descriptor, so any number can wait within `ulimit -n`.
            if transfer.startsAtOnce {
                start(transfer)
            } else {
                enqueue(transfer)
            }
        case .promote(let id):
            guard let transfer = transfers[id], !transfer.machine.isForeground else { return }
            transfer.machine.promote()
            // Waiting out a backoff: promoted means now.
            if transfer.machine.retryNow() { retrying[ObjectIdentifier(transfer)] = nil }
            leaveGate(transfer)
            if transfer.machine.state == .running {
                // Take it off the wire keeping every byte written, then resume it in the
                // foreground with a ranged request.
                detach(transfer)
                transfer.machine.pause()
                emit(.paused(id: id, bytesOnDisk: transfer.bytesOnDisk))
                start(transfer)
            } else if transfer.machine.state == .queued || transfer.machine.state == .paused {
                // Queued, or paused in the queue while background transfers are held.
                transfer.queueGeneration += 1
                start(transfer)
            }
        case .cancel(let id):
            guard let transfer = transfers[id] else { return }
            detach(transfer)
            retrying[ObjectIdentifier(transfer)] = nil
            transfer.queueGeneration += 1
            if case .fail(let error) = transfer.machine.cancel() {
                transfer.closeFile()
                try? FileManager.default.removeItem(atPath: transfer.request.partialPath)
                transfer.rememberValidator(nil)
                forget(transfer)
                emit(.failed(id: id, error: error))
            }
        case .respond(let id, let response):
            guard let transfer = transfers[id], transfer.machine.state == .waitingForCredentials else { return }
            if case .useCredential(let credential) = response { transfer.credential = credential }
            let action = transfer.machine.credentialsProvided(
                response != .cancel, bytesOnDisk: transfer.bytesOnDisk, validator: transfer.validator)
            apply(action, to: transfer)
        case .liftRestrictions(let id):
            guard let transfer = transfers[id] else { return }
            transfer.request.byteLimit = nil
            transfer.request.allowList = nil
            transfer.machine.liftAllowList()
        case .setBackgroundConcurrency(let count):
            configuration.backgroundConcurrency = count
        case .holdBackground(let held):
            holdBackground(held)
        case .holdMetered(let held):
            holdMetered(held)
        case .suspend(let on, let done):
            suspend(on, done: done)
        case .retryNow(let id):
            retryNow(id)
        case .shutdown:
            running = false
        }
    }

    // MARK: Scheduling

    /// Starts due retries, then background transfers up to the bound in order: priority, then
    /// arrival. Foreground and essential transfers never wait here and do not count against the bound.
    func startDueTransfers() {
        if !gateTimes.isEmpty { probeDueGates() }
        if !retrying.isEmpty {
            let now = clock.now()
            dropStaleRetryTimes()
            while let next = retryTimes.min, next.until <= now {
                _ = retryTimes.popMin()
                let transfer = next.transfer
                // One waiting at its server's gate is started by the gate (and one whose server
                // stopped answering meanwhile waits there).
                if next.isCurrent(in: retrying), gateOf[ObjectIdentifier(transfer)] == nil, !joinsGate(transfer) {
                    retrying[ObjectIdentifier(transfer)] = nil
                    if transfer.startsAtOnce { start(transfer) } else { enqueue(transfer) }
                }
                dropStaleRetryTimes()
            }
        }
        var runningBackground = active.values.reduce(0) { $0 + ($1.startsAtOnce ? 0 : 1) }
        while !backgroundHeld, runningBackground < configuration.backgroundConcurrency, let entry = queue.popMin() {
            let transfer = entry.transfer
            // A stale entry: the transfer was promoted, cancelled or already started.
            guard entry.generation == transfer.queueGeneration, transfers[transfer.id] === transfer,
                !transfer.startsAtOnce
            else { continue }
            runningBackground += 1
            start(transfer)
        }
    }

    func enqueue(_ transfer: Transfer) {
        transfer.queueGeneration += 1
        queue.insert(QueueEntry(transfer: transfer, generation: transfer.queueGeneration))
    }

    /// Opens the partial file (learning what is on disk) and starts the transfer's request.
    func start(_ transfer: Transfer) {
        if mustPark(transfer) {
            // Waits, holding no descriptor, until the network is not metered or the machine woke.
            transfer.queueGeneration += 1
            heldForNetwork[transfer.id] = transfer
            return
        }
        do {
            try transfer.openPartialFile()
        } catch {
            return finishFailed(transfer, error)
        }
        apply(transfer.machine.start(bytesOnDisk: transfer.bytesOnDisk, validator: transfer.validator), to: transfer)
    }

    func apply(_ action: TransferStateMachine.Action, to transfer: Transfer) {
        switch action {
        case .startRequest(let url, let offset, let validator):
            launch(transfer, url: url, offset: offset, validator: validator)
        case .waitUntil(let until, let attempt, let reason):
            transfer.persistValidator()
            // Waiting holds no descriptor either; the file is opened again when it starts.
            transfer.closeFile()
            retrying[ObjectIdentifier(transfer)] = transfer
            retryTimes.insert(RetryEntry(until: until, transfer: transfer))
            emit(.retrying(id: transfer.id, attempt: attempt, delay: until - clock.now(), reason: reason))
        case .askForCredentials(let challenge):
            // A credential given with the request is sent once without asking anyone.
            if transfer.credential != nil, !transfer.machine.credentialsSent {
                apply(
                    transfer.machine.credentialsProvided(
                        true, bytesOnDisk: transfer.bytesOnDisk, validator: transfer.validator), to: transfer)
            } else {
                emit(.needsCredentials(id: transfer.id, challenge: challenge))
            }
        case .verifyAndFinish:
            switch transfer.finish() {
            case .success(let digest):
                _ = transfer.machine.verified(nil)
                emit(
                    .finished(
                        id: transfer.id, path: transfer.request.destination, size: transfer.bytesOnDisk, sha256: digest,
                        receivedBytes: transfer.receivedBytes))
                forget(transfer)
            case .failure(let error):
                _ = transfer.machine.verified(error)
                finishFailed(transfer, error)
            }
        case .fail(let error):
            finishFailed(transfer, error)
        case .none:
            break
        }
    }

    /// Drops a transfer that has ended from every index.
    func forget(_ transfer: Transfer) {
        leaveGate(transfer)
        transfers[transfer.id] = nil
        if heldForNetwork[transfer.id] === transfer { heldForNetwork[transfer.id] = nil }
        destinations[transfer.request.destination] = nil
        destinations[transfer.request.partialPath] = nil
    }

    func finishFailed(_ transfer: Transfer, _ error: DownloadError) {
        detach(transfer)
        retrying[ObjectIdentifier(transfer)] = nil
        transfer.queueGeneration += 1
        transfer.persistValidator()
        transfer.closeFile()
        // Keep a partial file only if it holds bytes worth resuming (one never opened is unknown: kept).
        if transfer.partialFileOpened && transfer.bytesOnDisk == 0 {
            try? FileManager.default.removeItem(atPath: transfer.request.partialPath)
            transfer.rememberValidator(nil)
        }
        forget(transfer)
        emit(.failed(id: transfer.id, error: error))
    }
}

/// A transfer's due time for its retry.
struct RetryEntry: Comparable {
    let until: Duration
    let transfer: Transfer

    /// Whether the transfer still waits in `retrying` for this very time.
    func isCurrent(in retrying: [ObjectIdentifier: Transfer]) -> Bool {
        guard retrying[ObjectIdentifier(transfer)] === transfer,
            case .waitingForRetry(let due) = transfer.machine.state
        else { return false }
        return due == until
    }

    static func < (a: RetryEntry, b: RetryEntry) -> Bool { a.until < b.until }
    static func == (a: RetryEntry, b: RetryEntry) -> Bool { a.until == b.until && a.transfer === b.transfer }
}

extension EngineLoop {
    /// Pops entries of transfers that no longer wait for that time (cancelled, started, promoted).
    func dropStaleRetryTimes() {
        while let first = retryTimes.min, !first.isCurrent(in: retrying) { _ = retryTimes.popMin() }
        if retrying.isEmpty { retryTimes = Heap() }
    }
}

/// A queued background transfer's place in line: higher priority, then earlier arrival. (Essential
/// transfers are never queued; they start at once.)
struct QueueEntry: Comparable {
    let transfer: Transfer
    /// The transfer's queue generation when queued: a later change makes this entry stale.
    let generation: Int

    static func < (a: QueueEntry, b: QueueEntry) -> Bool {
        if a.transfer.request.priority != b.transfer.request.priority {
            return a.transfer.request.priority > b.transfer.request.priority
        }
        return a.transfer.sequence < b.transfer.sequence
    }

    static func == (a: QueueEntry, b: QueueEntry) -> Bool { a.transfer === b.transfer && a.generation == b.generation }
}
