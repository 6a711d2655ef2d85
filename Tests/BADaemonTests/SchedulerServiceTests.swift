import BAAssetServer
import BACore
import BADaemonProtocol
import BAScheduling
import BASettings
import BAStore
import BATestSupport
import Foundation
import Synchronization
import Testing

@testable import BADaemon

#if canImport(Glibc)
    import Glibc
#endif

/// basd's wall clock in a test: it moves only when the test moves it.
final class ManualWallClock: Sendable {
    private let current: Mutex<Date>
    init(_ start: Date) { current = Mutex(start) }
    var now: Date { current.withLock { $0 } }
    func advance(by seconds: TimeInterval) { current.withLock { $0 += seconds } }
}

/// Free bytes a test sets (basd's automatic purge reads them instead of `statvfs`).
final class ManualFreeSpace: Sendable {
    private let bytes: Mutex<Int64>
    init(_ bytes: Int64) { self.bytes = Mutex(bytes) }
    var value: Int64 { bytes.withLock { $0 } }
    func set(_ value: Int64) { bytes.withLock { $0 = value } }
}

/// A free-space check that can be held closed: a purge's thread waits in it until it is open.
final class PurgeGate: Sendable {
    static let freeBytes: Int64 = 1 << 40
    private let state = Mutex<(open: Bool, callers: Int)>((true, 0))
    private let condition = NSCondition()

    func close() { state.withLock { $0.open = false } }
    func open() {
        condition.lock()
        state.withLock { $0.open = true }
        condition.broadcast()
        condition.unlock()
    }
    var callers: Int { state.withLock { $0.callers } }

    /// The free-space check: counts the caller, then waits while the gate is closed.
    func pass() -> Int64 {
        state.withLock { $0.callers += 1 }
        condition.lock()
        while !state.withLock({ $0.open }) { condition.wait() }
        condition.unlock()
        return Self.freeBytes
    }

}

/// basd's log lines, so a test can wait for one (a bounded poll: the service's engine events are
/// handled by a task on the cooperative pool, so a test must not block a thread of it waiting).
final class LogInbox: Sendable {
    private let lines = Mutex<[String]>([])

    func append(_ line: String) { lines.withLock { $0.append(line) } }

    var all: [String] { lines.withLock { $0 } }

    func count(where matches: (String) -> Bool) -> Int { all.filter(matches).count }

    /// Waits until `count` lines match; throws after `timeout` seconds with the log.
    func wait(for count: Int, _ what: String, timeout: Double = 30, where matches: (String) -> Bool) async throws {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while self.count(where: matches) < count {
            guard Date() < deadline else {
                throw HarnessError("timed out waiting for \(what); log:\n\(all.joined(separator: "\n"))")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// basd's download service in this process, over a real store, engine, runner and extension, with
/// an injected wall clock (and free space). Its scheduler timer is stopped: the test calls `tick()`
/// itself, after moving the clock.
final class ServiceHarness {
    let stateDirectory: String
    let store: BAStore
    let service: BasdServices
    let log = LogInbox()

    init(
        stateDirectory: String, store: BAStore, clock: ManualWallClock,
        freeSpace: @escaping @Sendable (String) throws -> Int64 = { _ in Int64.max },
        configure: (inout BasdServices.Configuration) -> Void = { _ in }
    ) throws {
        self.stateDirectory = stateDirectory
        self.store = store
        var configuration = BasdServices.Configuration(stateDirectory: stateDirectory, daemonVersion: "test")
        configuration.runnerPath = BuildProducts.executable("ba-extension-runner")
        configuration.clock.wall = { clock.now }
        configuration.freeSpace = freeSpace
        configure(&configuration)
        // Downloads to loopback only, whatever the test's own settings say.
        try TestSettings.addLoopbackHosts(to: stateDirectory + "/config.json")
        var settings = SettingsFile(path: stateDirectory + "/config.json")
        if case .rejected(let error) = settings.check() { throw HarnessError("config.json: \(error)") }
        let log = self.log
        service = BasdServices(
            store: store, configuration: configuration, settings: settings, log: { log.append($0) },
            connectionCount: { 0 })
        service.start()
        // Before the clock first moves: a tick of the timer meanwhile saw the same "now" as the test's first.
        service.queue.sync { service.scheduler.stop() }
    }

    /// Writes basd's `config.json` in `stateDirectory`.
    static func writeSettings(_ settings: [String: Any], in stateDirectory: String) throws {
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
        try JSONSerialization.data(withJSONObject: settings).write(
            to: URL(fileURLWithPath: stateDirectory + "/config.json"))
    }

    /// One look of the scheduler, as its timer does it, and the purge it started (automatic, or
    /// the dry run before pruning the history), which walks on a thread of its own and ends on
    /// the executor.
    func tick() {
        service.queue.sync { service.scheduler.tick() }
        let deadline = ContinuousClock.now + .seconds(30)
        while service.queue.sync({ service.purge.running }) {
            guard ContinuousClock.now < deadline else {
                Issue.record("a purge did not end in 30 s; log:\n\(log.all.joined(separator: "\n"))")
                return
            }
            usleep(1_000)
        }
    }

    /// The app's process connects (`hello` with role `app`): a launch.
    func launch(_ app: String) throws {
        let result = service.queue.sync {
            service.requests.greet(ClientInfo(role: .app, bundleIdentifier: app, pid: getpid()), protocolVersion: 1)
        }
        if case .failure(let refusal) = result { throw HarnessError("hello refused: \(refusal)") }
    }

    func state(of app: String) throws -> SchedulingState {
        let stored = try #require(try store.app(app))
        return try SchedulingState(jsonData: Data(try #require(stored.scheduling).utf8))
    }

    func settings() -> BasdSettings { service.queue.sync { service.settings.current } }

    /// Waits for the `count`th periodic run of `app` to end and its next run to be saved.
    func waitForPeriodicRuns(_ count: Int, of app: String) async throws {
        try await log.wait(for: count, "periodic run \(count) to end") { $0.hasPrefix("\(app) periodic: extension ") }
        service.queue.sync {}  // the run's bookkeeping ends in the same block as its log line
    }

    func periodicRunsStarted(of app: String) -> Int { log.count { $0 == "\(app): periodic run" } }

    func shutdown() { service.shutdown() }
}

/// The daemon's own scheduler (`PeriodicScheduler.tick()`) driven by a manual clock: the periodic
/// interval backing off and shrinking with launches, the runtime allowance postponing a run to its
/// window's end, one catch-up run after a restart, and the automatic purge with an injected free
/// space (docs/scheduling.md, docs/purging.md). The rules alone are unit-tested in
/// BASchedulingTests; here basd's code applies them to a real store and real extension runs.
@Suite("basd's scheduler on a manual clock", .timeLimit(.minutes(3)))
struct SchedulerServiceTests {
    static let app = "com.example.scheduled"
    static let group = "group.com.example.scheduled"
    static let start = Date(timeIntervalSince1970: 1_780_000_000)
    static let hour: TimeInterval = 3_600
    static let day: TimeInterval = 86_400

    /// A state directory with `settings`, its store on `clock`, and the app registered with the
    /// sample extension and a manifest that lists nothing.
    static func prepare(
        _ directory: TemporaryDirectory, server: AssetServer, clock: ManualWallClock, settings: [String: Any] = [:],
        extensionPath: String? = BuildProducts.library("SampleSwiftExtension")
    ) throws -> (stateDirectory: String, store: BAStore) {
        let stateDirectory = directory.path + "/state"
        try ServiceHarness.writeSettings(settings, in: stateDirectory)
        let store = try BAStore.open(path: stateDirectory + "/state.sqlite", clock: { clock.now })
        let manifest = #"{"applicationGroupIdentifier": "\#(group)", "assets": []}"#
        server.setFile("/manifest.json", contents: Array(manifest.utf8))
        try store.register(
            StoredApp(
                bundleIdentifier: app, version: "1.0", appGroupIdentifier: group, appDirectory: directory.path,
                extensionPath: extensionPath, manifestURL: server.url("/manifest.json")))
        return (stateDirectory, store)
    }

    /// Seconds from `now` to the app's next periodic run.
    static func nextRunIn(_ harness: ServiceHarness, now: Date) throws -> TimeInterval {
        try #require(try harness.state(of: app).periodic.nextRun).timeIntervalSince(now)
    }

    /// Whether `seconds` is `interval` within the policy's ±10 % jitter.
    static func isJittered(_ seconds: TimeInterval, around interval: TimeInterval) -> Bool {
        seconds >= 0.9 * interval - 0.001 && seconds <= 1.1 * interval + 0.001
    }

    @Test("an unused app's interval backs off; a launch brings its run closer at once, daily launches shrink it")
    func intervalFollowsUse() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualWallClock(Self.start)
        let (stateDirectory, store) = try Self.prepare(directory, server: server, clock: clock)
        let harness = try ServiceHarness(stateDirectory: stateDirectory, store: store, clock: clock)
        defer { harness.shutdown() }
        let policy = harness.settings().periodicPolicy

        harness.tick()
        #expect(Self.isJittered(try Self.nextRunIn(harness, now: clock.now), around: 6 * Self.hour))
        #expect(harness.periodicRunsStarted(of: Self.app) == 0)

        // Five idle days: the catch-up run, then an interval doubled for each idle day after the first.
        clock.advance(by: 5 * Self.day)
        harness.tick()
        try await harness.waitForPeriodicRuns(1, of: Self.app)
        #expect(harness.periodicRunsStarted(of: Self.app) == 1)
        let idle = policy.interval(usage: AppUsage(), registeredAt: Self.start, now: clock.now)
        #expect(idle == 96 * Self.hour)
        #expect(Self.isJittered(try Self.nextRunIn(harness, now: clock.now), around: idle))

        // The app launches: its next run comes within the shorter interval, not four days out.
        try harness.launch(Self.app)
        var usage = try harness.state(of: Self.app).usage
        #expect(usage.launchDates == [clock.now])
        let launched = policy.interval(usage: usage, registeredAt: Self.start, now: clock.now)
        #expect(launched < 6 * Self.hour)
        #expect(Self.isJittered(try Self.nextRunIn(harness, now: clock.now), around: launched))

        // Launched daily for a week: every run is followed by one an interval away that shrinks to 3 h.
        for day in 1...6 {
            clock.advance(by: Self.day)
            try harness.launch(Self.app)
            harness.tick()
            try await harness.waitForPeriodicRuns(1 + day, of: Self.app)
        }
        #expect(harness.periodicRunsStarted(of: Self.app) == 7)
        usage = try harness.state(of: Self.app).usage
        #expect(usage.launches(inLast: 7 * Self.day, now: clock.now) == 7)
        #expect(policy.interval(usage: usage, registeredAt: Self.start, now: clock.now) == 3 * Self.hour)
        #expect(Self.isJittered(try Self.nextRunIn(harness, now: clock.now), around: 3 * Self.hour))
        #expect(try store.extensionRuns(app: Self.app, limit: 10).filter { $0.event == .periodic }.count == 7)
    }

    @Test("a due run past the daily runtime allowance is refused with the reason and postponed to the window's end")
    func allowanceUsedUp() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualWallClock(Self.start)
        let (stateDirectory, store) = try Self.prepare(
            directory, server: server, clock: clock, settings: ["dailyRuntimeAllowanceSeconds": 0.001])
        let harness = try ServiceHarness(stateDirectory: stateDirectory, store: store, clock: clock)
        defer { harness.shutdown() }
        let policy = harness.settings().runtimeAllowancePolicy

        harness.tick()
        clock.advance(by: 7 * Self.hour)
        harness.tick()
        try await harness.waitForPeriodicRuns(1, of: Self.app)  // any run takes more than a millisecond

        clock.advance(by: 7 * Self.hour)
        harness.tick()
        #expect(harness.periodicRunsStarted(of: Self.app) == 1)
        let refusal = harness.log.all.filter { $0.hasPrefix("\(Self.app): periodic run refused: ") }
        #expect(refusal.count == 1 && refusal[0].contains("daily runtime allowance of"), "\(harness.log.all)")
        let state = try harness.state(of: Self.app)
        let admission = state.allowance.admit(now: clock.now, usage: state.usage, policy: policy)
        guard case .refused(let reason, let windowEnd) = admission else {
            Issue.record("the allowance is not used up: \(state.allowance)")
            return
        }
        #expect(refusal.first?.hasSuffix(reason) == true)
        #expect(state.periodic.nextRun == windowEnd, "postponed to the window's end")
        #expect(windowEnd > clock.now)

        // Nothing until then; at the window's end the run happens.
        clock.advance(by: windowEnd.timeIntervalSince(clock.now) - 60)
        harness.tick()
        #expect(harness.periodicRunsStarted(of: Self.app) == 1)
        clock.advance(by: 61)
        harness.tick()
        try await harness.waitForPeriodicRuns(2, of: Self.app)
        #expect(harness.periodicRunsStarted(of: Self.app) == 2)
    }

    @Test("runs missed while basd was down are caught up once by a new service on the same store")
    func catchUpOnceAfterRestart() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualWallClock(Self.start)
        let (stateDirectory, store) = try Self.prepare(directory, server: server, clock: clock)
        let first = try ServiceHarness(stateDirectory: stateDirectory, store: store, clock: clock)
        first.tick()
        let missed = try #require(try first.state(of: Self.app).periodic.nextRun)
        first.shutdown()

        // Down for three days: a dozen due times at the 6 h base interval.
        clock.advance(by: 3 * Self.day)
        #expect(clock.now.timeIntervalSince(missed) > 2 * Self.day)
        let second = try ServiceHarness(stateDirectory: stateDirectory, store: store, clock: clock)
        defer { second.shutdown() }
        second.tick()
        try await second.waitForPeriodicRuns(1, of: Self.app)
        for _ in 0..<5 {
            clock.advance(by: 60)
            second.tick()
        }
        #expect(second.periodicRunsStarted(of: Self.app) == 1)
        #expect(try store.extensionRuns(app: Self.app, limit: 10).filter { $0.event == .periodic }.count == 1)
        let state = try second.state(of: Self.app)
        #expect(try #require(state.periodic.nextRun) > clock.now, "the next run is an interval after the catch-up")
    }

    @Test("under the threshold basd purges on its own, least recently used first, keeping modified files")
    func automaticPurge() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualWallClock(Self.start)
        let threshold: Int64 = 1 << 30
        let (stateDirectory, store) = try Self.prepare(
            directory, server: server, clock: clock, settings: ["purgeFreeSpaceThresholdBytes": threshold],
            extensionPath: nil)
        let free = ManualFreeSpace(threshold * 2)
        let harness = try ServiceHarness(
            stateDirectory: stateDirectory, store: store, clock: clock, freeSpace: { _ in free.value })
        defer { harness.shutdown() }

        // Four finished downloads, 10 000 bytes each, waiting in the container (no app, no extension).
        let names = ["a", "b", "c", "d"]
        for (index, name) in names.enumerated() {
            server.setFile("/\(name).bin", contents: SampleAppFixture.bytes(10_000, seed: UInt8(index)))
        }
        let app = try #require(try store.app(Self.app))
        try harness.service.queue.syncThrowing {
            for name in names {
                try harness.service.transfers.schedule(
                    DownloadDescription(identifier: name, url: server.url("/\(name).bin"), fileSize: 10_000), for: app,
                    contentRequest: 0)
            }
        }
        let deadline = Date(timeIntervalSinceNow: 30)
        var finished: [StoredDownload] = []
        while finished.count < names.count {
            finished = try store.downloads(app: Self.app).filter { $0.state == .finished }
            guard Date() < deadline else { throw HarnessError("downloads did not finish: \(harness.log.all)") }
            try await Task.sleep(for: .milliseconds(20))
        }

        // Delivered before the app's first launch: held until it (issue 23; PurgeServiceAloneTests).
        #expect(try store.assets().map(\.heldUntilLaunch) == Array(repeating: "firstLaunch", count: names.count))

        // The app launches and takes them (a move keeps the inode) and changes d; last used, oldest
        // first: d, c, a, b.
        try harness.launch(Self.app)
        #expect(try store.assets().allSatisfy { $0.heldUntilLaunch == nil }, "the launch released them")
        let container = stateDirectory + "/groups/\(Self.group)"
        let used: [String: TimeInterval] = ["d": 1, "c": 2, "a": 3, "b": 4]
        for download in finished {
            let path = container + "/\(download.identifier).bin"
            try FileManager.default.moveItem(atPath: try #require(download.destinationPath), toPath: path)
            if download.identifier == "d" {
                let handle = try #require(FileHandle(forWritingAtPath: path))
                try handle.seekToEnd()
                try handle.write(contentsOf: Data("changed".utf8))
                try handle.close()
            }
            // Access times after the downloads finished (now, on the real clock), so they decide the order.
            let accessed = Date().addingTimeInterval(try #require(used[download.identifier]) * Self.hour)
            // The modification time is passed back unchanged (UTIME_OMIT does not import).
            var info = stat()
            #expect(stat(path, &info) == 0)
            var times = [timespec(tv_sec: Int(accessed.timeIntervalSince1970), tv_nsec: 0), info.st_mtim]
            #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        }
        func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: container + "/\(name).bin") }

        // Plenty of free space: nothing goes.
        harness.tick()
        #expect(names.allSatisfy(exists))
        // 15 000 bytes short: the check waits for its minute, then c and a go (20 000 bytes), b and d stay.
        free.set(threshold - 15_000)
        harness.tick()
        #expect(names.allSatisfy(exists), "at most one check a minute")
        clock.advance(by: 61)
        harness.tick()
        #expect(!exists("c") && !exists("a"), "\(harness.log.all)")
        #expect(exists("b"), "used most recently, and not needed")
        #expect(exists("d"), "a modified file is never purged")
        let purged = harness.log.all.filter { $0.hasPrefix("purged ") }
        #expect(purged.count == 2 && purged[0].contains("/c.bin") && purged[1].contains("/a.bin"), "\(purged)")
        #expect(harness.log.all.contains { $0.contains("under \(threshold): purged 20000 bytes") })
    }

    /// Issue 19, "no request stalls the service": a purge walks the containers (up to 100,000
    /// entries) and `/proc`; on the executor that held every client for the whole walk. Here the
    /// purge's thread is held in its first step (the free-space check) while the executor is
    /// asked to run something: it must, and a second purge must wait for the first.
    @Test("a purge walks on its own thread: basd serves meanwhile, and a second purge waits for the first")
    func purgeOffTheExecutor() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualWallClock(Self.start)
        let (stateDirectory, store) = try Self.prepare(directory, server: server, clock: clock, extensionPath: nil)
        let gate = PurgeGate()
        let harness = try ServiceHarness(
            stateDirectory: stateDirectory, store: store, clock: clock, freeSpace: { _ in gate.pass() })
        defer {
            gate.open()
            harness.shutdown()
        }
        let reports = Mutex<[PurgeReport]>([])
        gate.close()
        for _ in 0..<2 {
            harness.service.queue.sync {
                harness.service.purge.purge(dryRun: true) { outcome in
                    if case .success(let report) = outcome { reports.withLock { $0.append(report) } }
                }
            }
        }
        try await waitUntil("a purge to reach its free-space check", timeout: 30) { gate.callers >= 1 }
        // The first purge is held on its thread; the executor is free.
        let served = Atomic<Bool>(false)
        let executor = harness.service.queue
        let asker = Thread { executor.sync { served.store(true, ordering: .releasing) } }
        asker.start()
        try await waitUntil("the executor to run something while a purge walks", timeout: 30) {
            served.load(ordering: .acquiring)
        }
        #expect(harness.service.queue.sync { harness.service.purge.running })
        #expect(gate.callers == 1, "the second purge started before the first ended")
        #expect(reports.withLock { $0.isEmpty })
        gate.open()
        try await waitUntil("the purges to report", timeout: 30) { reports.withLock { $0.count } >= 2 }
        #expect(gate.callers == 2)
        #expect(reports.withLock { $0.allSatisfy { $0.dryRun && $0.freeBytes == PurgeGate.freeBytes } })
    }

    @Test("history older than a week is pruned: ended downloads nothing is owed for, acknowledged events")
    func historyIsPruned() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualWallClock(Self.start)
        let (stateDirectory, store) = try Self.prepare(directory, server: server, clock: clock, extensionPath: nil)
        let harness = try ServiceHarness(stateDirectory: stateDirectory, store: store, clock: clock)
        defer { harness.shutdown() }
        server.setFile("/a.bin", contents: SampleAppFixture.bytes(1_000, seed: 1))
        server.setFile("/b.bin", contents: SampleAppFixture.bytes(1_000, seed: 2))
        let app = try #require(try store.app(Self.app))
        try harness.service.queue.syncThrowing {
            for name in ["a", "b"] {
                try harness.service.transfers.schedule(
                    DownloadDescription(identifier: name, url: server.url("/\(name).bin")), for: app, contentRequest: 0)
            }
        }
        let deadline = Date(timeIntervalSinceNow: 30)
        while try store.downloads(app: Self.app).filter({ $0.state == .finished }).count < 2 {
            guard Date() < deadline else { throw HarnessError("downloads did not finish: \(harness.log.all)") }
            try await Task.sleep(for: .milliseconds(20))
        }
        // The app heard about the download that finished first (acknowledged through its finished
        // event); the other one is still owed. (Which one finished first is the transfers' business.)
        let finished = try store.undeliveredEvents(app: Self.app, limit: 100).filter { $0.kind == .finished }
        #expect(finished.count == 2)
        let first = try #require(finished.first)
        let owed = try #require(
            try store.downloads(app: Self.app).first { $0.uniqueIdentifier != first.downloadUniqueIdentifier })
        // The app took the file (acknowledging removes what it left in place).
        try harness.service.queue.syncThrowing {
            try harness.service.delivery.acknowledge(app: Self.app, through: first.sequence)
        }
        harness.tick()
        #expect(try store.downloads(app: Self.app).count == 2, "a day old: kept")

        clock.advance(by: 8 * Self.day)
        harness.tick()
        let left = try store.downloads(app: Self.app).map(\.identifier)
        #expect(left == [owed.identifier], "\(left)")
        #expect(harness.log.all.contains { $0.contains("pruned 1 ended download(s)") }, "\(harness.log.all)")
    }
}
