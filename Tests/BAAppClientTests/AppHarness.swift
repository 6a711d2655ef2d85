import BADaemonProtocol
import BATestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

struct AppHarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Lines a child process printed, collected by a reader thread so a test can wait for one
/// (bounded by a deadline, never by a sleep).
final class LineInbox: @unchecked Sendable {
    private let condition = NSCondition()
    private var lines: [String] = []
    private var ended = false

    func append(_ line: String) {
        condition.withLock {
            lines.append(line)
            condition.broadcast()
        }
    }

    func end() {
        condition.withLock {
            ended = true
            condition.broadcast()
        }
    }

    var all: [String] { condition.withLock { lines } }

    /// Waits until `predicate` holds for the lines so far; throws after `timeout` seconds or when
    /// the output ended without it.
    @discardableResult
    func wait(timeout: Double = 30, _ what: String, until predicate: ([String]) -> Bool) throws -> [String] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !predicate(lines) {
            if ended { throw AppHarnessError("output ended before \(what); lines:\n\(lines.joined(separator: "\n"))") }
            guard condition.wait(until: deadline) else {
                throw AppHarnessError("timed out waiting for \(what); lines:\n\(lines.joined(separator: "\n"))")
            }
        }
        return lines
    }
}

/// One JSON line of BATestApp, parsed.
struct AppLine: @unchecked Sendable {
    let object: [String: Any]
    init?(_ line: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            return nil
        }
        self.object = object
    }
    subscript(key: String) -> Any? { object[key] }
    func string(_ key: String) -> String? { object[key] as? String }
    func int(_ key: String) -> Int? { (object[key] as? NSNumber)?.intValue }
    func bool(_ key: String) -> Bool? { (object[key] as? NSNumber)?.boolValue }
    var errorCode: Int? { ((object["error"] as? [String: Any])?["code"] as? NSNumber)?.intValue }
    var errorReason: String? { (object["error"] as? [String: Any])?["reason"] as? String }
    var callback: String? { string("callback") }
    var command: String? { string("command") }
}

/// A running child process whose stdout lines are collected; SIGKILLed by `kill()`.
final class ChildProcess: @unchecked Sendable {
    let process = Process()
    let output = LineInbox()
    let errors = LineInbox()
    private let input = Pipe()
    private let exited = DispatchSemaphore(value: 0)

    init(_ path: String, _ arguments: [String], environment: [String: String]) throws {
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = err
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        Self.collect(out.fileHandleForReading, into: output)
        Self.collect(err.fileHandleForReading, into: errors)
    }

    private static func collect(_ handle: FileHandle, into inbox: LineInbox) {
        Thread {
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    inbox.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending = Data(pending[(newline + 1)...])
                }
            }
            inbox.end()
        }.start()
    }

    var pid: Int32 { process.processIdentifier }

    /// Writes one line to the child's stdin.
    func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// Waits for the child to exit; its status, or nil after `timeout` seconds.
    func waitForExit(timeout: Double) -> Int32? {
        guard exited.wait(timeout: .now() + timeout) == .success else { return nil }
        exited.signal()
        return process.terminationStatus
    }

    /// SIGKILLs the child if it still runs and reaps it.
    func kill() {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        _ = waitForExit(timeout: 10)
    }
}

/// A real basd on a temporary state folder and socket; restartable on the same folder.
final class Basd: @unchecked Sendable {
    let directory: TemporaryDirectory
    let stateDirectory: String
    let socketPath: String
    private(set) var child: ChildProcess

    init(directory: TemporaryDirectory) throws {
        self.directory = directory
        stateDirectory = directory.path + "/state"
        socketPath = directory.path + "/run/basd.sock"
        child = try Self.start(stateDirectory, socketPath)
    }

    private static func start(_ stateDirectory: String, _ socketPath: String) throws -> ChildProcess {
        let child = try ChildProcess(
            BuildProducts.executable("basd"), ["--state-dir", stateDirectory, "--socket", socketPath],
            // Its own settings folder (never the developer's), downloads to loopback only.
            environment: try TestSettings.prepare(stateDirectory: stateDirectory))
        do {
            try child.output.wait(timeout: 20, "basd's listening line") {
                $0.contains("basd listening on \(socketPath)")
            }
        } catch {
            child.kill()
            throw AppHarnessError("\(error)\nstderr:\n\(child.errors.all.joined(separator: "\n"))")
        }
        return child
    }

    /// SIGKILLs basd and starts a new one on the same state folder and socket.
    func restart() throws {
        child.kill()
        child = try Self.start(stateDirectory, socketPath)
    }

    /// Registers an app through a CLI connection.
    func register(_ bundleIdentifier: String, group: String?) throws {
        let cli = try DaemonClient(socketPath: socketPath, client: ClientInfo(role: .cli, pid: getpid()))
        defer { cli.close() }
        try cli.call(
            .registerApp(
                AppRegistration(
                    bundleIdentifier: bundleIdentifier, version: "1.0", appGroupIdentifier: group,
                    appDirectory: directory.path, extensionPath: nil)))
    }

    func kill() { child.kill() }
}

/// BATestApp, driven over stdin.
final class TestApp: @unchecked Sendable {
    let child: ChildProcess

    init(socketPath: String, bundleIdentifier: String, group: String, environment: [String: String] = [:]) throws {
        var env = environment
        env["BA_SOCKET"] = socketPath
        env["BA_BUNDLE_IDENTIFIER"] = bundleIdentifier
        env["BA_TEST_APP_GROUP"] = group
        child = try ChildProcess(BuildProducts.executable("BATestApp"), [], environment: env)
        try child.output.wait(timeout: 20, "the app's ready line") { $0.contains { $0.contains("\"ready\"") } }
    }

    var pid: Int32 { child.pid }

    func send(_ line: String) { child.send(line) }

    /// The parsed lines so far.
    var lines: [AppLine] { child.output.all.compactMap(AppLine.init) }

    /// Waits until `count` lines match `predicate`; returns the matching ones. The wait is on a
    /// thread of its own, not on the concurrency pool (``offThePool(_:)``).
    @discardableResult
    func wait(
        timeout: Double = 30, _ what: String, count: Int = 1, where predicate: @escaping (AppLine) -> Bool
    ) async throws -> [AppLine] {
        try await offThePool { try self.waitBlocking(timeout: timeout, what, count: count, where: predicate) }
    }

    /// Sends a command and returns its result line, waiting off the concurrency pool.
    func run(_ line: String, timeout: Double = 30) async throws -> AppLine {
        try await offThePool { try self.runBlocking(line, timeout: timeout) }
    }

    /// ``wait(timeout:_:count:where:)`` on the calling thread.
    @discardableResult
    func waitBlocking(
        timeout: Double = 30, _ what: String, count: Int = 1, where predicate: @escaping (AppLine) -> Bool
    ) throws -> [AppLine] {
        let lines = try child.output.wait(timeout: timeout, what) { lines in
            lines.compactMap(AppLine.init).filter(predicate).count >= count
        }
        return lines.compactMap(AppLine.init).filter(predicate)
    }

    /// Sends a command and returns its result line (the `count`-th result of that command so far).
    func runBlocking(_ line: String, timeout: Double = 30) throws -> AppLine {
        let command = String(line.split(separator: " ").first ?? "")
        let before = lines.filter { $0.command == command && $0["event"] == nil }.count
        send(line)
        return try waitBlocking(timeout: timeout, "the result of \(line)", count: before + 1) {
            $0.command == command && $0["event"] == nil
        }[before]
    }

    func kill() { child.kill() }
}
