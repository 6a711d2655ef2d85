import CBASystem
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An executable running as a real child process of the test, the one way every suite starts
/// one (``runProcess(_:_:environment:currentDirectory:)`` runs one to completion; ``DaemonProcess``
/// is a basd in one).
///
/// - Its stdout and stderr are pipes, each read to its end on a thread of its own (not on
///   Dispatch's global queue: its few workers were all blocked in such reads when many tests ran
///   processes at once, and the children then blocked on full pipes), so a chatty child never
///   blocks and the test can read what it wrote so far, or wait for a line.
/// - Every wait is bounded by a timeout and wakes on the child's output or exit (a test never
///   sleeps to wait). A blocking wait belongs on a thread of its own: call it in ``offThePool(_:)``
///   from an async test, or use an async form.
/// - It runs in a process group of its own (like a job a shell starts: Foundation's `Process`
///   makes the child its group's leader). ``kill()`` (in a `defer`) SIGKILLs the child by its pid,
///   ``killGroup()`` its whole group; neither touches any other process.
/// - Most children start through Foundation's `Process`; one that needs a descriptor as its fd 3
///   and nothing else of the test process (basd activated by a socket, a doc's shell) starts
///   through ``init(spawning:environment:descriptor3:)``, with the same reading and waiting.
///
/// ```swift
/// let demo = try ChildProcess(BuildProducts.executable("ba"), ["demo"])
/// defer { demo.killGroup() }
/// try demo.waitForOutput(containing: "==> 5/6 ")
/// demo.signalGroup(SIGINT)                    // what Ctrl-C in a terminal does
/// #expect(demo.waitForExit() == 21)
/// ```
package final class ChildProcess: @unchecked Sendable {
    // @unchecked: `process` is only started in init and then read; everything else is behind `condition`.

    /// What the child's standard input is.
    package enum Input: Sendable {
        /// This process's own standard input (what `Process` gives a child by default).
        case inherited
        /// A pipe the test writes to with ``send(_:)``, open until ``closeStandardInput()``.
        case pipe
    }

    /// How the child ended.
    package enum Termination: Equatable, Sendable {
        /// It called `exit` with this status.
        case exited(Int32)
        /// This signal ended it.
        case signalled(Int32)

        /// The shell's number for it: the status, or 128 + the signal.
        package var status: Int32 {
            switch self {
            case .exited(let status): status
            case .signalled(let signal): 128 + signal
            }
        }
    }

    /// The child's `Process`, or nil for one started by ``init(spawning:environment:descriptor3:)``.
    private let process: Process?
    /// Set once in init, before any other thread starts.
    private var childPID: pid_t = 0
    private let executable: String
    private let input: Pipe?
    private let condition = NSCondition()
    private var output = Data()
    private var errors = Data()
    private var openPipes = 2
    private var stdoutClosed = false
    private var termination: Termination?
    /// Bumped on every change a waiter may be waiting for (output, end of a pipe, the exit).
    private var generation = 0

    /// Starts `path arguments…`.
    ///
    /// - Parameters:
    ///   - environment: added to this process's environment (a key set here wins).
    ///   - currentDirectory: where it starts (this process's current directory when nil).
    ///   - input: its standard input (``Input/inherited`` unless the test writes to it).
    /// - Throws: when the executable cannot be started.
    package init(
        _ path: String, _ arguments: [String], environment: [String: String] = [:], currentDirectory: String? = nil,
        input: Input = .inherited
    ) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        self.process = process
        self.input = input == .pipe ? Pipe() : nil
        executable = path
        if let pipe = self.input { process.standardInput = pipe }
        let outputPipe = Pipe()
        let errorPipe = Pipe()
        process.standardOutput = outputPipe
        process.standardError = errorPipe
        process.terminationHandler = { [weak self] process in
            let ended: Termination =
                process.terminationReason == .uncaughtSignal
                ? .signalled(process.terminationStatus) : .exited(process.terminationStatus)
            self?.change { $0.termination = ended }
            // Its standard input is nobody's now: the write end goes too (see `read`).
            try? self?.input?.fileHandleForWriting.close()
        }
        try ChildProcess.launching.withLock { try process.run() }
        childPID = process.processIdentifier
        read(outputPipe.fileHandleForReading, isOutput: true)
        read(errorPipe.fileHandleForReading, isOutput: false)
    }

    /// Starts `arguments` (`arguments[0]` an absolute path) as basd starts an extension's runner
    /// (`ba_sys_spawn`): in a process group of its own, every signal at its default disposition and
    /// none blocked (a test thread blocks most signals, and a child would inherit the mask), stdin
    /// from /dev/null, stdout and stderr one pipe (read into ``stdout``), `descriptor3` as its fd 3,
    /// and no other descriptor of the test process (not Foundation's either: a `Process` child
    /// inherits a socket by which Foundation notices its exit, which a background job of a shell
    /// would then hold). A thread of its own waits for its exit.
    ///
    /// - Parameter environment: its whole environment (not added to this process's).
    /// - Throws: ``HarnessError`` when it cannot be started.
    package init(spawning arguments: [String], environment: [String: String], descriptor3: Int32) throws {
        var pipe: [Int32] = [-1, -1]
        guard ba_sys_pipe_cloexec(&pipe) == 0 else { throw HarnessError("pipe: errno \(errno)") }
        let envp = environment.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let status = Self.withCStrings(arguments) { argv in
            Self.withCStrings(envp) { env in ba_sys_spawn(arguments[0], argv, env, descriptor3, pipe[1], &pid) }
        }
        close(pipe[1])
        guard status == 0 else {
            close(pipe[0])
            throw HarnessError("spawn \(arguments[0]): \(String(cString: strerror(status)))")
        }
        process = nil
        input = nil
        executable = arguments[0]
        childPID = pid
        openPipes = 1
        read(FileHandle(fileDescriptor: pipe[0], closeOnDealloc: true), isOutput: true)
        Thread { [self] in
            var raw: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(childPID, &raw, 0) } while result < 0 && errno == EINTR
            let signal = raw & 0x7f
            let ended: Termination =
                result != childPID ? .exited(-1) : signal == 0 ? .exited((raw >> 8) & 0xff) : .signalled(signal)
            change { $0.termination = ended }
        }.start()
    }

    private static func withCStrings<R>(
        _ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R
    ) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    /// Reads `handle` to its end on a thread of its own, into stdout or stderr.
    private func read(_ handle: FileHandle, isOutput: Bool) {
        Thread { [self] in
            while true {
                let data = handle.availableData
                let closing = change { child in
                    guard !(isOutput && child.stdoutClosed) else { return true }
                    isOutput ? child.output.append(data) : child.errors.append(data)
                    return false
                }
                // Closed at once, not when the handle is freed: a test process that keeps a thousand
                // read ends open trips swift-corelibs-foundation 6.3's Process.run, which reads past
                // readdir's buffer while listing /proc/self/fd (a crash once the list passes ~1,300).
                if closing || data.isEmpty { try? handle.close() }
                if data.isEmpty || closing { break }
            }
            change { $0.openPipes -= 1 }
        }.start()
    }

    /// Changes the state under the lock and wakes every waiter.
    @discardableResult
    private func change<T>(_ body: (ChildProcess) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        generation += 1
        condition.broadcast()
        return body(self)
    }

    private func locked<T>(_ body: (ChildProcess) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body(self)
    }

    /// Its pid (also its process group's id).
    package var pid: pid_t { childPID }

    /// Whether it has not exited yet.
    package var isRunning: Bool { locked { $0.termination == nil } }

    /// What it wrote to stdout so far.
    package var stdout: String { locked { String(decoding: $0.output, as: UTF8.self) } }

    /// What it wrote to stderr so far.
    package var stderr: String { locked { String(decoding: $0.errors, as: UTF8.self) } }

    /// The complete lines of stdout so far (a last line without its newline is not one yet).
    package var stdoutLines: [String] { Self.completeLines(stdout) }

    /// The complete lines of stderr so far.
    package var stderrLines: [String] { Self.completeLines(stderr) }

    /// The complete lines of stdout so far, parsed as JSON objects (lines that are not are skipped).
    package var jsonLines: [[String: Any]] {
        stdoutLines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    private static func completeLines(_ text: String) -> [String] {
        guard let last = text.lastIndex(of: "\n") else { return [] }
        return text[..<last].split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// Waits until `condition` holds, checking it again whenever the child writes or exits (and
    /// every 50 ms, for a condition on something else too).
    ///
    /// - Throws: ``HarnessError`` after `timeout` seconds, or when the child exited and closed its
    ///   output without the condition holding; the message has what it wrote.
    package func wait(_ what: String, timeout: Double = 60, until condition: (ChildProcess) throws -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            let seen = locked { $0.generation }
            if try condition(self) { return }
            let (ended, status) = locked { ($0.termination != nil && $0.openPipes == 0, $0.termination) }
            if ended {
                throw HarnessError(
                    "\((executable as NSString).lastPathComponent) exited (\(status?.status ?? -1)) "
                        + "before \(what): \(stdout)\(stderr)")
            }
            guard Date() < deadline else {
                throw HarnessError("timed out after \(timeout) s waiting for \(what): \(stdout)\(stderr)")
            }
            self.condition.lock()
            if generation == seen {
                _ = self.condition.wait(until: min(deadline, Date(timeIntervalSinceNow: 0.05)))
            }
            self.condition.unlock()
        }
    }

    /// Waits until stdout contains `text` and returns stdout; throws as ``wait(_:timeout:until:)``.
    @discardableResult
    package func waitForOutput(containing text: String, timeout: Double = 60) throws -> String {
        try wait(text.debugDescription, timeout: timeout) { $0.stdout.contains(text) }
        return stdout
    }

    /// ``wait(_:timeout:until:)`` on a thread of its own, not on the concurrency pool.
    package func waiting(
        _ what: String, timeout: Double = 60, until condition: @escaping (ChildProcess) throws -> Bool
    ) async throws {
        try await offThePool { try self.wait(what, timeout: timeout, until: condition) }
    }

    /// Writes `line` and a newline to its standard input (``Input/pipe``).
    package func send(_ line: String) {
        try? input?.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Closes its standard input (``Input/pipe``): it reads end of file.
    package func closeStandardInput() { try? input?.fileHandleForWriting.close() }

    /// Sends `signal` to the process alone.
    package func signal(_ signal: Int32) { Glibc.kill(pid, signal) }

    /// Sends `signal` to its whole process group, as a terminal does for Ctrl-C.
    package func signalGroup(_ signal: Int32) { Glibc.kill(-pid, signal) }

    /// Stops reading its stdout, as `| head` does after its lines: the reader closes the pipe's read
    /// end when the next chunk arrives (closing it under a blocked read would not end the read),
    /// which that chunk never joins ``stdout``; the process's next write then fails (EPIPE or
    /// SIGPIPE). Its stderr is still read.
    package func closeStdout() { locked { $0.stdoutClosed = true } }

    /// Waits for it to exit, and then (unless `readingToTheEnd` is false) for stderr and stdout
    /// (unless closed) to be read to their end, each bounded by `timeout` seconds (no bound when
    /// nil). How it ended, or nil if it still runs after `timeout`.
    package func waitForTermination(timeout: Double? = 60, readingToTheEnd: Bool = true) -> Termination? {
        condition.lock()
        defer { condition.unlock() }
        // No `wait(until: .distantFuture)`: Foundation traps on a date that far.
        func wait(until deadline: Date?) -> Bool {
            guard let deadline else {
                condition.wait()
                return true
            }
            return condition.wait(until: deadline)
        }
        let exitDeadline = timeout.map { Date(timeIntervalSinceNow: $0) }
        while termination == nil {
            guard wait(until: exitDeadline) || termination != nil else { return nil }
        }
        // A grandchild that holds a pipe open must not keep the test here past the bound.
        let drainDeadline = timeout.map { Date(timeIntervalSinceNow: $0) }
        while readingToTheEnd && openPipes > 0 {
            guard wait(until: drainDeadline) || openPipes == 0 else { break }
        }
        return termination
    }

    /// ``waitForTermination(timeout:readingToTheEnd:)`` as the shell's number: the exit status, or
    /// 128 + the signal that ended it; nil if it still runs after `timeout`.
    package func waitForExit(timeout: Double? = 60, readingToTheEnd: Bool = true) -> Int32? {
        waitForTermination(timeout: timeout, readingToTheEnd: readingToTheEnd)?.status
    }

    /// SIGKILLs it (by its pid) if it still runs, and reaps it. Safe to call twice.
    package func kill() {
        if isRunning { signal(SIGKILL) }
        _ = waitForTermination(timeout: 10)
        closeStandardInput()
    }

    /// SIGKILLs its process group (it and what it started there) if it still runs, and reaps it.
    package func killGroup() {
        if isRunning { signalGroup(SIGKILL) }
        _ = waitForTermination(timeout: 10)
        closeStandardInput()
    }
}

/// A test harness's failure: what was expected, and what the process said.
package struct HarnessError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// The outcome of a finished child process.
package struct ProcessOutput: Sendable {
    /// The exit status, or 128 + the signal that ended it.
    package var status: Int32
    package var stdout: String
    package var stderr: String
}

/// Runs an executable to completion on a thread of its own, so a long child (a compiler) never
/// blocks the concurrency pool the other tests run on.
package func runProcess(
    _ path: String, _ arguments: [String], environment: [String: String] = [:], currentDirectory: String? = nil
)
    async throws -> ProcessOutput
{
    try await offThePool {
        try runProcessBlocking(path, arguments, environment: environment, currentDirectory: currentDirectory)
    }
}

/// Runs an executable to completion on the calling thread (the test's time limit bounds it).
package func runProcessBlocking(
    _ path: String, _ arguments: [String], environment: [String: String] = [:], currentDirectory: String? = nil
)
    throws
    -> ProcessOutput
{
    let child = try ChildProcess(path, arguments, environment: environment, currentDirectory: currentDirectory)
    let status = child.waitForExit(timeout: nil) ?? -1
    return ProcessOutput(status: status, stdout: child.stdout, stderr: child.stderr)
}

extension ChildProcess {
    /// Held around every `Process.run()` of the tests: swift-corelibs-foundation's `run()` is not
    /// safe to call from several threads at once (a full run crashed in its `memmove` with many
    /// `runProcess` calls under way; issue 21's tests start hundreds of `ba` processes).
    package static let launching = NSLock()
}
