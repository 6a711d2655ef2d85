import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An executable running as a real process in a process group of its own (like a job a shell
/// starts: Foundation's `Process` makes the child its group's leader) while a test reads its
/// output as it comes, waits for a line, signals it, or closes its standard output. Every wait is
/// bounded; ``kill()`` (in a `defer`) SIGKILLs the group if it still runs.
///
/// ```swift
/// let demo = try WatchedProcess(BuildProducts.executable("ba"), ["demo"])
/// defer { demo.kill() }
/// try demo.waitForOutput(containing: "==> 5/6 ")
/// demo.signalGroup(SIGINT)                    // what Ctrl-C in a terminal does
/// #expect(demo.waitForExit() == 21)
/// ```
public final class WatchedProcess: @unchecked Sendable {
    // @unchecked: `process` is only started in init and then read; the buffers are locked.
    private let process = Process()
    private let lock = NSLock()
    private var output = Data()
    private var errors = Data()
    private var stdoutClosed = false
    private let exited = DispatchSemaphore(value: 0)
    private let drained = DispatchGroup()

    /// Starts `path arguments…`; `environment` is added to this process's.
    public init(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let outputPipe = Pipe()
        let errorPipe = Pipe()
        process.standardOutput = outputPipe
        process.standardError = errorPipe
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        for (pipe, isOutput) in [(outputPipe, true), (errorPipe, false)] {
            let handle = pipe.fileHandleForReading
            drained.enter()
            Thread { [self] in
                while true {
                    let data = handle.availableData
                    let closing = lock.withLock {
                        guard !(isOutput && stdoutClosed) else { return true }
                        isOutput ? output.append(data) : errors.append(data)
                        return false
                    }
                    if closing { try? handle.close() }
                    if data.isEmpty || closing { break }
                }
                drained.leave()
            }.start()
        }
    }

    public var pid: pid_t { process.processIdentifier }
    public var stdout: String { lock.withLock { String(decoding: output, as: UTF8.self) } }
    public var stderr: String { lock.withLock { String(decoding: errors, as: UTF8.self) } }

    /// Polls stdout until it contains `text`; throws after `timeout` seconds, or if the process exits first.
    @discardableResult
    public func waitForOutput(containing text: String, timeout: Double = 60) throws -> String {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            let seen = stdout
            if seen.contains(text) { return seen }
            guard process.isRunning else {
                throw WatchedProcessError(
                    "exited (\(process.terminationStatus)) before printing \(text): \(seen)\(stderr)")
            }
            guard Date() < deadline else {
                throw WatchedProcessError("no \(text) within \(timeout) s: \(seen)\(stderr)")
            }
            usleep(2000)
        }
    }

    /// Sends `signal` to the process alone.
    public func signal(_ signal: Int32) { Glibc.kill(pid, signal) }

    /// Sends `signal` to its whole process group, as a terminal does for Ctrl-C.
    public func signalGroup(_ signal: Int32) { Glibc.kill(-pid, signal) }

    /// Stops reading its stdout, as `| head` does after its lines: the reader closes the pipe's read
    /// end when the next chunk arrives (closing it under a blocked read would not end the read),
    /// which that chunk never joins ``stdout``; the process's next write then fails (EPIPE or
    /// SIGPIPE). Its stderr is still read.
    public func closeStdout() {
        lock.withLock { stdoutClosed = true }
    }

    /// Waits for the exit and for stderr (and stdout, unless closed) to be read to the end; the
    /// exit status (128 + the signal for a killed process), or nil after `timeout`.
    public func waitForExit(timeout: Double = 60) -> Int32? {
        guard exited.wait(timeout: .now() + timeout) == .success else { return nil }
        exited.signal()
        _ = drained.wait(timeout: .now() + timeout)
        let status = process.terminationStatus
        return process.terminationReason == .uncaughtSignal ? 128 + status : status
    }

    /// SIGKILLs its process group if it still runs.
    public func kill() {
        if process.isRunning { signalGroup(SIGKILL) }
        _ = waitForExit(timeout: 10)
    }
}

public struct WatchedProcessError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The live processes whose command line mentions `text` (e.g. a temporary folder a child was
/// given), as `pid: command line`, from /proc. Zombies have an empty command line and are left out.
public func processesMentioning(_ text: String) -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { entry in
        guard Int32(entry) != nil, entry != String(getpid()),
            let raw = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"), !raw.isEmpty
        else { return nil }
        let line = String(decoding: raw.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
        return line.contains(text) ? "\(entry): \(line)" : nil
    }
}

/// Another process holding the `flock` on a lock file, as an app or extension inside
/// `withExclusiveControl` does: util-linux `flock --no-fork PATH sleep 120` (scripts/install-deps.sh),
/// so the spawned pid is the holder. ``release()`` SIGKILLs it, which frees the lock; so does the
/// end of the test process at the latest (the sleep is bounded too).
public final class LockHoldingProcess: @unchecked Sendable {
    private let process = Process()
    /// The holder's pid, as `/proc/locks` and `ba lock status` name it.
    public let pid: Int32

    /// Starts the holder; it takes the lock shortly after (wait for it where it matters).
    public init(path: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["flock", "--no-fork", path, "sleep", "120"]
        try process.run()
        pid = process.processIdentifier
    }

    /// Kills the holder and waits for it: the lock is free when this returns. Safe to call twice.
    public func release() {
        if process.isRunning { Glibc.kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { release() }
}
