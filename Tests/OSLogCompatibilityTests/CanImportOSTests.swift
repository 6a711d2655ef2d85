import BATestSupport
import Foundation
import Testing
import os

/// Once `os` is built, `#if canImport(os)` is true for every package in the build, which then
/// takes its Apple path: swift-argument-parser's `Mutex` imports `os` and uses
/// `os_unfair_lock` without depending on this package (a clean build once failed on it).
@Suite struct CanImportOSTests {
    @Test("os_unfair_lock locks, refuses a second taker while held, and unlocks")
    func unfairLock() {
        let lock = os_unfair_lock_t.allocate(capacity: 1)
        lock.initialize(to: os_unfair_lock())
        defer { lock.deallocate() }
        os_unfair_lock_lock(lock)
        os_unfair_lock_assert_owner(lock)
        #expect(!os_unfair_lock_trylock(lock))
        os_unfair_lock_unlock(lock)
        #expect(os_unfair_lock_trylock(lock))
        os_unfair_lock_unlock(lock)
    }

    /// swift-argument-parser's `Mutex.swift` as this build resolved it.
    static let argumentParserMutex: String? = {
        var folder = BuildProducts.directory
        while folder.path != "/" {
            let file = folder.appendingPathComponent(
                "checkouts/swift-argument-parser/Sources/ArgumentParser/Utilities/Mutex.swift")
            if FileManager.default.fileExists(atPath: file.path) { return file.path }
            folder.deleteLastPathComponent()
        }
        return nil
    }()

    @Test(
        "swift-argument-parser's Mutex builds on its os path next to this os, links without it, and locks",
        .enabled(
            if: argumentParserMutex != nil,
            "needs swift-argument-parser's checkout under the build folder; skipped without it"))
    func argumentParserMutexOnTheOSPath() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let main = directory.path + "/main.swift"
        try """
        import Dispatch

        #if canImport(os)
            print("os path")
        #endif
        let counter = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 2_000) { _ in counter.withLock { $0 += 1 } }
        print(counter.withLock { $0 })
        """.write(toFile: main, atomically: true, encoding: .utf8)
        let program = directory.path + "/mutex"
        // As SwiftPM builds another package's module: this build's modules in view, no `-los`.
        let build = try await runProcess(
            "/usr/bin/env",
            [
                "swiftc", "-swift-version", "5", "-I", BuildProducts.directory.path + "/Modules",
                try #require(Self.argumentParserMutex), main, "-o", program,
            ])
        #expect(build.status == 0, "\(build.stderr)")
        let run = try await runProcess(program, [])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "os path\n2000\n")
    }
}
