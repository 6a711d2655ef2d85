import BACore
import BAExclusiveControl
internal import CBASystem
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One spawned runner and everything read from it.
struct SupervisedCall {
    let invocation: BAExtensionInvocation
    /// The invocation's events, in call order.
    let events: [RunnerEvent]
    /// The library, as an absolute path.
    let libraryPath: String
    /// The call's private temporary folder (its TMPDIR), removed when the call ends.
    let temporaryDirectory: String
    let pid: pid_t
    var socket: Int32
    var output: Int32
    /// Readable when the runner has ended: a pidfd for a spawned runner (-1 on old kernels), the
    /// status pipe for one forked by the warm runner.
    let exitFD: Int32
    /// For a forked runner: the warm runner that reports its wait status on `exitFD`.
    let forkedBy: WarmRunner.Control?
    let started: ContinuousClock.Instant
    /// When the current call started (spawn, or the previous call's return).
    var callStarted: ContinuousClock.Instant
    /// Which event is being called.
    var callIndex = 0
    /// The current call's deadline.
    var deadline: ContinuousClock.Instant

    var decoder = FrameDecoder()
    /// Whether the protocol socket and the output pipe may still have something to read.
    var socketOpen = true
    var outputOpen = true
    var outputTail: [UInt8] = []
    /// When to tell the extension the end is near (extensionWillTerminate), before the kill.
    var warnAt: ContinuousClock.Instant
    var warned = false
    var sawHello = false
    var requestSent = false
    var killedAtDeadline = false
    var protocolViolation: String?
    var failure: RunnerFailure?
    var summary: RunnerSummary?
    var result = BAExtensionRunResult(verdict: .ok)
    var received: [DownloadDescription] = []
    /// Log lines of this call past the bounds, and their bytes.
    var droppedLogs = 0
    var droppedLogBytes = 0
    /// Bytes of the log lines kept for this call.
    var keptLogBytes = 0
    /// Calls that ended `ok` while the runner goes on, not yet handed to the caller.
    var endedCalls: [BAExtensionRunResult] = []

    static let outputTailLimit = 64 * 1024
    /// Most log lines kept per call; the rest are counted and dropped.
    static let logLimit = 1000
    /// Most bytes of log lines (their UTF-8 messages) kept per call: 1,000 lines of 2,000 bytes
    /// would make a report too large for a frame of basd's protocol (1 MiB). A line that does not
    /// fit what is left is dropped whole and counted. `docs/c-abi.md` states both bounds.
    static let logByteLimit = 128 * 1024

    init(
        runnerPath: String, invocation: BAExtensionInvocation, sandbox: BAExtensionSandbox, warm: WarmRunner?
    )
        throws(BAExtensionHostError)
    {
        self.invocation = invocation
        events = invocation.events
        started = .now
        callStarted = started
        (deadline, warnAt) = Self.deadlines(of: invocation, callStarted: started, runnerStarted: started)
        libraryPath = Self.resolvedLibraryPath(
            invocation.libraryPath, currentDirectory: FileManager.default.currentDirectoryPath)
        var template = Array(
            (FileManager.default.temporaryDirectory.path + "/\(Self.temporaryPrefix)\(getpid())-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw BAExtensionHostError("cannot create the call's temporary folder: \(Self.errorText())")
        }
        temporaryDirectory = String(cString: made)
        // A call with its own environment needs an exec: the warm runner has the host's.
        if invocation.environment.isEmpty, let control = warm?.ready() {
            switch Self.fork(
                from: control, invocation: invocation, libraryPath: libraryPath,
                temporaryDirectory: temporaryDirectory, sandbox: sandbox)
            {
            case .success(let forked):
                (pid, socket, output, exitFD) = forked
                forkedBy = control
                return
            case .failure:
                warm?.discard(control)
            }
        }
        forkedBy = nil
        do throws(BAExtensionHostError) {
            (pid, socket, output, exitFD) = try Self.spawn(
                runnerPath: runnerPath, invocation: invocation, libraryPath: libraryPath,
                temporaryDirectory: temporaryDirectory, sandbox: sandbox)
        } catch {
            rmdir(temporaryDirectory)
            throw error
        }
    }

    typealias Started = (pid: pid_t, socket: Int32, output: Int32, exitFD: Int32)

    /// A call's deadline (its own `timeout`, within the invocation's `totalTimeout`) and when to
    /// warn the extension before it.
    static func deadlines(
        of invocation: BAExtensionInvocation, callStarted: ContinuousClock.Instant,
        runnerStarted: ContinuousClock.Instant
    ) -> (deadline: ContinuousClock.Instant, warnAt: ContinuousClock.Instant) {
        var deadline = callStarted + invocation.timeout
        if let total = invocation.totalTimeout { deadline = min(deadline, runnerStarted + total) }
        return (deadline, deadline - min(.milliseconds(500), invocation.timeout / 10))
    }

    /// A protocol socketpair and an output pipe, close-on-exec.
    static func channels() throws(BAExtensionHostError) -> (pair: [Int32], pipe: [Int32]) {
        var pair: [Int32] = [-1, -1]
        var pipe: [Int32] = [-1, -1]
        guard ba_sys_socketpair_cloexec(&pair) == 0 else {
            throw BAExtensionHostError("socketpair failed: \(Self.errorText())")
        }
        guard ba_sys_pipe_cloexec(&pipe) == 0 else {
            close(pair[0])
            close(pair[1])
            throw BAExtensionHostError("pipe2 failed: \(Self.errorText())")
        }
        return (pair, pipe)
    }

    /// Spawns a runner (posix_spawn: exec, own process group).
    static func spawn(
        runnerPath: String, invocation: BAExtensionInvocation, libraryPath: String, temporaryDirectory: String,
        sandbox: BAExtensionSandbox
    ) throws(BAExtensionHostError) -> Started {
        let (pair, pipe) = try channels()
        var environment = ProcessInfo.processInfo.environment
        for (key, value) in invocation.environment { environment[key] = value }
        let argv =
            [runnerPath]
            + jailArguments(
                invocation: invocation, parent: getpid(), libraryPath: libraryPath,
                temporaryDirectory: temporaryDirectory, sandbox: sandbox)
        let envp = environment.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let status = withCStrings(argv) { argvPointer in
            withCStrings(envp) { envPointer in
                ba_sys_spawn(runnerPath, argvPointer, envPointer, pair[1], pipe[1], &pid)
            }
        }
        close(pair[1])
        close(pipe[1])
        guard status == 0 else {
            close(pair[0])
            close(pipe[0])
            throw BAExtensionHostError("cannot start \(runnerPath): \(String(cString: strerror(status)))")
        }
        return (pid, pair[0], pipe[0], ba_sys_pidfd_open(pid))
    }

    /// Asks the warm runner for a child; fails (and closes everything) if it does not answer with
    /// a pid, e.g. because it died.
    static func fork(
        from control: WarmRunner.Control, invocation: BAExtensionInvocation, libraryPath: String,
        temporaryDirectory: String, sandbox: BAExtensionSandbox
    ) -> Result<Started, BAExtensionHostError> {
        let pair: [Int32]
        let pipe: [Int32]
        do { (pair, pipe) = try channels() } catch { return .failure(error) }
        var status: [Int32] = [-1, -1]
        guard ba_sys_pipe_cloexec(&status) == 0 else {
            for fd in pair + pipe { close(fd) }
            return .failure(BAExtensionHostError("pipe2 failed: \(Self.errorText())"))
        }
        let arguments = jailArguments(
            invocation: invocation, parent: control.pid, libraryPath: libraryPath,
            temporaryDirectory: temporaryDirectory, sandbox: sandbox)
        var payload: [UInt8] = []
        for argument in arguments { payload += Array(argument.utf8) + [0] }
        let sent = payload.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                ba_sys_zygote_request(control.fd, $0.baseAddress, $0.count, pair[1], pipe[1], status[1])
            }
        }
        close(pair[1])
        close(pipe[1])
        close(status[1])
        var pid: Int32 = 0
        let count = sent == 0 ? readAll(status[0], &pid) : 0
        guard count == MemoryLayout<Int32>.size, pid > 0 else {
            for fd in [pair[0], pipe[0], status[0]] { close(fd) }
            return .failure(BAExtensionHostError("the warm runner did not start the call"))
        }
        return .success((pid, pair[0], pipe[0], status[0]))
    }

    /// Reads a 4-byte value, retrying EINTR and short reads; the number of bytes read.
    static func readAll(_ fd: Int32, _ value: inout Int32) -> Int {
        var got = 0
        withUnsafeMutableBytes(of: &value) { buffer in
            while got < buffer.count {
                let n = read(fd, buffer.baseAddress! + got, buffer.count - got)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                got += n
            }
        }
        return got
    }

    static func errorText() -> String { String(cString: strerror(errno)) }

    /// A call's temporary folder is `$TMPDIR/ba-tmp-HOSTPID-XXXXXX`.
    static let temporaryPrefix = "ba-tmp-"

    /// Removes the temporary folders of calls whose host process is gone (killed before it could
    /// remove them); done once per process, when its first supervisor is made.
    static let removeOrphanedTemporaryDirectories: Void = {
        let directory = FileManager.default.temporaryDirectory.path
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for entry in entries where entry.hasPrefix(temporaryPrefix) {
            let fields = entry.dropFirst(temporaryPrefix.count).split(separator: "-")
            guard fields.count == 2, let host = pid_t(fields[0]), host > 0, host != getpid() else { continue }
            // Only a host that is certainly gone: a live process with that pid keeps its folders.
            guard kill(host, 0) != 0 && errno == ESRCH else { continue }
            try? FileManager.default.removeItem(atPath: directory + "/" + entry)
        }
    }()

    /// How much longer than the host's deadline the runner waits before it ends the call itself
    /// (when the host is gone or stuck).
    static let runnerDeadlineGrace = Duration.seconds(1)

    /// The runner's command line: its parent, its own deadline, and what the sandbox lets the call
    /// touch (the extension's folder and the manifest to read; the container, a finished file's
    /// folder and the private temporary folder to write).
    static func jailArguments(
        invocation: BAExtensionInvocation, parent: pid_t, libraryPath: String, temporaryDirectory: String,
        sandbox: BAExtensionSandbox
    ) -> [String] {
        let deadline = invocation.lifetime + runnerDeadlineGrace
        let milliseconds = deadline.components.seconds * 1000 + deadline.components.attoseconds / 1_000_000_000_000_000
        var arguments = [
            BA_RUNNER_ARG_PARENT, String(parent), BA_RUNNER_ARG_DEADLINE_MS, String(milliseconds),
            BA_RUNNER_ARG_SANDBOX, sandbox.isEnabled ? "on" : "off", BA_RUNNER_ARG_TEMPORARY, temporaryDirectory,
            BA_RUNNER_ARG_MAX_PROCESSES, String(sandbox.maximumProcesses),
        ]
        // The library's folder, and its real folder when the path is a symbolic link (Landlock
        // checks the file a link leads to; the app's own links are the app's choice).
        var reads = [(libraryPath as NSString).deletingLastPathComponent]
        if let real = realpath(libraryPath, nil) {
            let resolved = (String(cString: real) as NSString).deletingLastPathComponent
            free(real)
            if resolved != reads[0] { reads.append(resolved) }
        }
        reads += sandbox.readOnlyPaths
        var writes = sandbox.readWritePaths
        if let container = invocation.appGroupContainerPath { writes.append(container) }
        for event in invocation.events {
            switch event {
            case .contentRequest(_, let manifestPath, _, _, _): reads.append(manifestPath)
            case .finished(_, let filePath):
                // A folder inside the container is granted with the container already, and is
                // never granted by its own path: the extension may have made it a link to a
                // folder outside (the confused deputy). basd's finished files are in a folder of
                // its own, outside every container, that no extension can replace.
                let folder = (filePath as NSString).deletingLastPathComponent
                if let container = invocation.appGroupContainerPath,
                    folder == container || folder.hasPrefix(container.hasSuffix("/") ? container : container + "/")
                {
                    break
                }
                writes.append(folder)
            case .failed, .challenge, .willTerminate, .shouldDownload: break
            }
        }
        // Each folder once (the finished files of many events usually share one).
        var seen: Set<String> = []
        for path in reads where !path.isEmpty && seen.insert("r" + path).inserted {
            arguments += [BA_RUNNER_ARG_READ, path]
        }
        for path in writes where !path.isEmpty && seen.insert("w" + path).inserted {
            arguments += [BA_RUNNER_ARG_WRITE, path]
        }
        return arguments
    }

    static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    mutating func run(callEnded: (BAExtensionRunResult) -> Void) -> BAExtensionRunResult {
        let status = waitForExit(callEnded: callEnded)
        // The runner is gone; kill whatever it left in its process group, then read what is left.
        ProcessGroup.kill(pid)
        drain()
        close(socket)
        close(output)
        if exitFD >= 0 { close(exitFD) }
        try? FileManager.default.removeItem(atPath: temporaryDirectory)
        // Calls that returned just before the exit, read by the drain.
        for ended in endedCalls { callEnded(ended) }
        endedCalls = []
        result.duration = .now - callStarted
        result.callIndex = callIndex
        result.processID = pid
        result.wasForked = forkedBy != nil
        result.output = String(decoding: outputTail, as: UTF8.self)
        result.verdict = verdict(exitStatus: status)
        finishDownloads()
        callEnded(result)
        return result
    }

    /// A call that is not the last returned: its result is complete (`ok`), and the runner goes
    /// on with the next event under a deadline of its own.
    mutating func endCall(_ finished: RunnerSummary) {
        summary = finished
        result.verdict = .ok
        result.duration = .now - callStarted
        result.callIndex = callIndex
        result.processID = pid
        result.wasForked = forkedBy != nil
        finishDownloads()
        endedCalls.append(result)
        var next = BAExtensionRunResult(verdict: .ok)
        next.identity = result.identity
        result = next
        received = []
        summary = nil
        droppedLogs = 0
        droppedLogBytes = 0
        keptLogBytes = 0
        callIndex += 1
        callStarted = .now
        (deadline, warnAt) = Self.deadlines(of: invocation, callStarted: callStarted, runnerStarted: started)
        warned = false
    }

    /// Polls the socket, the output pipe and `exitFD` until the runner exits or the deadline
    /// passes (then kills the group). Returns the wait status.
    mutating func waitForExit(callEnded: (BAExtensionRunResult) -> Void) -> Int32 {
        while true {
            for ended in endedCalls { callEnded(ended) }
            endedCalls = []
            if let status = reap(blocking: false) { return status }
            let left = deadline - .now
            if left <= .zero {
                killedAtDeadline = true
                if pid > 0 { kill(-pid, SIGKILL) }
                return reap(blocking: true) ?? 0
            }
            warnIfDue()
            let untilWake = (warned ? deadline : min(warnAt, deadline)) - .now
            let leftMilliseconds = Int32(
                clamping: max(
                    0,
                    untilWake.components.seconds * 1000 + untilWake.components.attoseconds / 1_000_000_000_000_000 + 1))
            // A descriptor at its end is left out (-1): it would make every poll return at once.
            var fds = [
                pollfd(fd: socketOpen ? socket : -1, events: Int16(POLLIN), revents: 0),
                pollfd(fd: outputOpen ? output : -1, events: Int16(POLLIN), revents: 0),
            ]
            // Without a pidfd (old kernels) wake up periodically to check for exit.
            let timeout: Int32
            if exitFD >= 0 {
                fds.append(pollfd(fd: exitFD, events: Int16(POLLIN), revents: 0))
                timeout = leftMilliseconds
            } else {
                timeout = min(leftMilliseconds, 10)
            }
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            if ready < 0 && errno != EINTR { return reap(blocking: true) ?? 0 }
            if fds[0].revents != 0 { socketOpen = readSocket() }
            if fds[1].revents != 0 { outputOpen = readOutput() }
        }
    }

    /// Sends `terminate` once the warning time has come, if the extension implements
    /// extension_will_terminate and this call is not that entry point itself.
    mutating func warnIfDue() {
        guard !warned, ContinuousClock.now >= warnAt else { return }
        warned = true
        guard requestSent, let identity = result.identity,
            identity.entryPoints & (1 << UInt32(EntryPoint.extensionWillTerminate.rawValue)) != 0,
            events[callIndex] != .willTerminate
        else { return }
        let frame = HostMessage.terminate.frame()
        _ = frame.withUnsafeBytes { ba_sys_send_all(socket, $0.baseAddress, $0.count) }
    }

    mutating func reap(blocking: Bool) -> Int32? {
        var status: Int32 = 0
        if forkedBy != nil {
            // The warm runner reaps its children and writes the wait status; an end of the pipe
            // without one means the warm runner died, and the call with it (SIGKILL).
            if !blocking {
                var ready = pollfd(fd: exitFD, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 0) == 1 else { return nil }
            }
            return Self.readAll(exitFD, &status) == MemoryLayout<Int32>.size ? status : SIGKILL
        }
        while true {
            let reaped = waitpid(pid, &status, blocking ? 0 : WNOHANG)
            if reaped == pid { return status }
            if reaped < 0 && errno == EINTR { continue }
            return nil
        }
    }

    /// Reads what is left on both descriptors after exit, for at most a second (a straggler
    /// that escaped the process group could hold them open).
    mutating func drain() {
        let limit = ContinuousClock.now + .seconds(1)
        while (socketOpen || outputOpen) && ContinuousClock.now < limit {
            var fds = [
                pollfd(fd: socketOpen ? socket : -1, events: Int16(POLLIN), revents: 0),
                pollfd(fd: outputOpen ? output : -1, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, 2, 100)
            if ready < 0 && errno != EINTR { break }
            if fds[0].revents != 0 { socketOpen = readSocket() }
            if fds[1].revents != 0 { outputOpen = readOutput() }
        }
    }

    /// Reads once from the socket; false at end of stream.
    @discardableResult
    mutating func readSocket() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let count = buffer.withUnsafeMutableBytes { read(socket, $0.baseAddress, $0.count) }
        if count < 0 { return errno == EINTR || errno == EAGAIN }
        if count == 0 { return false }
        guard protocolViolation == nil else { return true }
        decoder.append(buffer[0..<count])
        do {
            while let frame = try decoder.next() {
                handle(try RunnerMessage.decode(frame))
                if protocolViolation != nil { break }
            }
        } catch {
            violate("malformed message from the runner: \(error)")
        }
        return true
    }

    /// Reads once from the output pipe, keeping the tail; false at end of stream.
    @discardableResult
    mutating func readOutput() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        let count = buffer.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
        if count < 0 { return errno == EINTR || errno == EAGAIN }
        if count == 0 { return false }
        outputTail.append(contentsOf: buffer[0..<count])
        if outputTail.count > Self.outputTailLimit { outputTail.removeFirst(outputTail.count - Self.outputTailLimit) }
        return true
    }

    mutating func violate(_ reason: String) {
        guard protocolViolation == nil else { return }
        protocolViolation = reason
        if pid > 0 { kill(-pid, SIGKILL) }
    }

    mutating func handle(_ message: RunnerMessage) {
        if !sawHello {
            guard case .hello(let version) = message else { return violate("the runner did not start with hello") }
            guard version == RunnerProtocol.version else {
                return violate("the runner speaks protocol \(version); this host speaks \(RunnerProtocol.version)")
            }
            sawHello = true
            sendRequest()
            return
        }
        switch message {
        case .hello:
            violate("a second hello")
        case .identity(let identity):
            result.identity = identity
        case .download(let download):
            // The runner refuses past the bound itself; more than that is a broken runner.
            guard received.count < invocation.maximumDownloads else {
                return violate("received more than \(invocation.maximumDownloads) downloads")
            }
            received.append(download)
        case .scheduled(let download):
            guard result.scheduled.count < invocation.maximumDownloads else {
                return violate("too many scheduled downloads")
            }
            result.scheduled.append(download)
        case .cancelled(let identifier):
            guard result.cancelled.count < invocation.maximumDownloads else { return violate("too many cancellations") }
            result.cancelled.append(identifier)
        case .log(let level, let text):
            let bytes = text.utf8.count
            if result.logs.count < Self.logLimit, keptLogBytes + bytes <= Self.logByteLimit {
                keptLogBytes += bytes
                result.logs.append(BAExtensionLogLine(level: level, message: text))
            } else {
                droppedLogs += 1
                droppedLogBytes += bytes
            }
        case .credential(let user, let password):
            result.credential = (user, password)
        case .failure(let reported):
            failure = reported
        case .packDecisions(let answers):
            guard case .shouldDownload(let packs) = events[callIndex] else {
                return violate("pack decisions from a call that is not should_download")
            }
            guard result.shouldDownload == nil else { return violate("pack decisions sent twice") }
            guard answers.count == packs.count else {
                return violate("\(answers.count) pack decisions for \(packs.count) packs")
            }
            result.shouldDownload = answers
        case .finished(let finished):
            guard summary == nil else { return violate("a call ended twice") }
            if case .shouldDownload = events[callIndex], result.shouldDownload == nil {
                return violate("should_download ended without its answers")
            }
            if callIndex < events.count - 1 {
                endCall(finished)
            } else {
                summary = finished
            }
        }
    }

    mutating func sendRequest() {
        let request = RunRequest(
            libraryPath: libraryPath, event: invocation.event, memoryLimitBytes: invocation.memoryLimitBytes,
            maximumDownloads: UInt32(clamping: invocation.maximumDownloads),
            lockPath: invocation.appGroupContainerPath.map(ExclusiveControlLock.path(inContainer:)) ?? "",
            currentDownloads: invocation.currentDownloads, moreEvents: invocation.moreEvents)
        let frame = HostMessage.request(request).frame()
        // A runner that died before reading gives EPIPE here (MSG_NOSIGNAL: no SIGPIPE for the
        // host); its exit status tells the rest.
        _ = frame.withUnsafeBytes { ba_sys_send_all(socket, $0.baseAddress, $0.count) }
        requestSent = true
    }

    /// `path` made absolute against `currentDirectory`: dlopen searches the system library path
    /// for a name without a slash, so a relative "libX.so" must become the file here.
    static func resolvedLibraryPath(_ path: String, currentDirectory: String) -> String {
        path.hasPrefix("/")
            ? path : (currentDirectory.hasSuffix("/") ? currentDirectory : currentDirectory + "/") + path
    }
}
