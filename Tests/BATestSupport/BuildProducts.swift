import Foundation

/// Where `swift build` put this package's products: the folder of the running test binary.
public enum BuildProducts {
    /// The build folder (e.g. `.build/x86_64-unknown-linux-gnu/debug`).
    public static let directory: URL = {
        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: executable).deletingLastPathComponent()
        // An .xctest bundle directory (XCTest on some setups) sits inside the build folder.
        while url.pathExtension == "xctest" || url.lastPathComponent == "MacOS" || url.lastPathComponent == "Contents" {
            url.deleteLastPathComponent()
        }
        return url
    }()

    /// The dynamic library product `name` (`lib<name>.so`).
    public static func library(_ name: String) -> String { directory.appendingPathComponent("lib\(name).so").path }

    /// The executable product `name`.
    public static func executable(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The package root (three levels above the build folder: .build/<triple>/<config>).
    public static let packageRoot: URL = {
        var url = directory
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
            url.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    }()

    /// A file of the package, e.g. `Examples/Manifests/sample-manifest.json`.
    public static func source(_ relativePath: String) -> String {
        packageRoot.appendingPathComponent(relativePath).path
    }
}

/// A temporary directory for one test; removed by `remove()`.
public struct TemporaryDirectory: Sendable {
    public let url: URL
    public var path: String { url.path }

    public init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("ba-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Writes `contents` to `name` inside the directory and returns its path.
    @discardableResult
    public func write(_ name: String, _ contents: String) throws -> String {
        let file = url.appendingPathComponent(name)
        try Data(contents.utf8).write(to: file)
        return file.path
    }

    public func remove() { try? FileManager.default.removeItem(at: url) }
}

/// The outcome of a finished child process.
public struct ProcessOutput: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

/// Runs an executable to completion on a thread of its own, so a long child (a compiler) never
/// blocks the concurrency pool the other tests run on.
public func runProcess(
    _ path: String, _ arguments: [String], environment: [String: String] = [:], currentDirectory: String? = nil
)
    async throws -> ProcessOutput
{
    try await offThePool {
        try runProcessBlocking(path, arguments, environment: environment, currentDirectory: currentDirectory)
    }
}

/// Runs an executable to completion, reading both pipes concurrently (a full pipe would block it).
public func runProcessBlocking(
    _ path: String, _ arguments: [String], environment: [String: String], currentDirectory: String?
)
    throws
    -> ProcessOutput
{
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment { env[key] = value }
    process.environment = env
    if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Each pipe is read to its end on a thread of its own. Not on Dispatch's global queue: its
    // few workers were all blocked in such reads when many tests ran processes at once, later
    // reads waited for Dispatch to add workers (about one a second), the children blocked on full
    // pipes, and the whole test run stalled for a minute at its start.
    let group = DispatchGroup()
    nonisolated(unsafe) var outData = Data()
    nonisolated(unsafe) var errData = Data()
    group.enter()
    Thread {
        outData = out.fileHandleForReading.readDataToEndOfFile()
        group.leave()
    }.start()
    group.enter()
    Thread {
        errData = err.fileHandleForReading.readDataToEndOfFile()
        group.leave()
    }.start()
    group.wait()
    process.waitUntilExit()
    return ProcessOutput(
        status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self))
}

/// Whether any live (not zombie) process is still in process group `pgid`, from /proc.
public func processGroupExists(_ pgid: pid_t) -> Bool {
    guard kill(-pgid, 0) == 0 else { return false }
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.contains { entry in
        guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 2 && pid_t(fields[2]) == pgid && fields[0] != "Z" && fields[0] != "X"
    }
}

/// Runs blocking `work` (waiting for a process's line, an event, an exit) on a thread of its own
/// and awaits its result. A test must not wait while holding one of the concurrency pool's
/// threads: there are as many as cores (two on a small CI machine), and two tests blocked in such
/// a wait stall every other test of the run, whose time limits then expire (runs that failed so).
public func offThePool<T>(_ work: @escaping () throws -> T) async throws -> T {
    let box = UncheckedBox(work)
    let outcome: UncheckedBox<Result<T, any Error>> = await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: UncheckedBox(Result { try box.value() })) }.start()
    }
    return try outcome.value.get()
}

/// A value handed to another thread by a caller that does not touch it meanwhile.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
