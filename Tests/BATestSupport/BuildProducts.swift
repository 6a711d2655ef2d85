import Foundation

/// Where `swift build` put this package's products: the folder of the running test binary.
package enum BuildProducts {
    /// The build folder (e.g. `.build/x86_64-unknown-linux-gnu/debug`).
    package static let directory: URL = {
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
    package static func library(_ name: String) -> String { directory.appendingPathComponent("lib\(name).so").path }

    /// The executable product `name`.
    package static func executable(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The package root (three levels above the build folder: .build/<triple>/<config>).
    package static let packageRoot: URL = {
        var url = directory
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
            url.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    }()

    /// The clang module map of swift-system's `CSystem`, which a `swiftc` build outside SwiftPM
    /// that imports `BackgroundAssets` needs (it re-exports swift-system's `SystemPackage`): in
    /// the `checkouts` folder of the build folder or one above it.
    package static let systemModuleMap: String = {
        var url = directory
        while url.path != "/" {
            let candidate = url.appendingPathComponent(
                "checkouts/swift-system/Sources/CSystem/include/module.modulemap")
            if FileManager.default.fileExists(atPath: candidate.path) { return candidate.path }
            url.deleteLastPathComponent()
        }
        return source(".build/checkouts/swift-system/Sources/CSystem/include/module.modulemap")
    }()

    /// A file of the package, e.g. `Examples/Manifests/sample-manifest.json`.
    package static func source(_ relativePath: String) -> String {
        packageRoot.appendingPathComponent(relativePath).path
    }
}

/// A temporary directory for one test; removed by `remove()`.
package struct TemporaryDirectory: Sendable {
    package let url: URL
    package var path: String { url.path }

    package init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("ba-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Writes `contents` to `name` inside the directory and returns its path.
    @discardableResult
    package func write(_ name: String, _ contents: String) throws -> String {
        let file = url.appendingPathComponent(name)
        try Data(contents.utf8).write(to: file)
        return file.path
    }

    /// Writes `contents` to `name` (which may contain folders) and returns its URL.
    @discardableResult
    package func write(_ name: String, _ contents: [UInt8]) throws -> URL {
        let file = url.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(contents).write(to: file)
        return file
    }

    package func remove() { try? FileManager.default.removeItem(at: url) }
}

/// Runs blocking `work` (waiting for a process's line, an event, an exit) on a thread of its own
/// and awaits its result. A test must not wait while holding one of the concurrency pool's
/// threads: there are as many as cores (two on a small CI machine), and two tests blocked in such
/// a wait stall every other test of the run, whose time limits then expire (runs that failed so).
package func offThePool<T>(_ work: @escaping () throws -> T) async throws -> T {
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

/// Waits (a bounded poll, every 5 ms) until `condition` holds; throws after `timeout` seconds,
/// naming `what`.
package func waitUntil(
    _ what: String, timeout: Double, _ condition: () throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw HarnessError("timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(5))
    }
}
