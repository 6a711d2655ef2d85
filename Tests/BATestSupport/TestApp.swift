import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One JSON line of BATestApp, parsed.
package struct AppLine: @unchecked Sendable {
    package let object: [String: Any]
    package init?(_ line: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            return nil
        }
        self.object = object
    }
    package subscript(key: String) -> Any? { object[key] }
    package func string(_ key: String) -> String? { object[key] as? String }
    package func int(_ key: String) -> Int? { (object[key] as? NSNumber)?.intValue }
    package func bool(_ key: String) -> Bool? { (object[key] as? NSNumber)?.boolValue }
    package var errorCode: Int? { ((object["error"] as? [String: Any])?["code"] as? NSNumber)?.intValue }
    package var errorReason: String? { (object["error"] as? [String: Any])?["reason"] as? String }
    package var callback: String? { string("callback") }
    package var command: String? { string("command") }
}

/// BATestApp, driven over stdin.
package final class TestApp: @unchecked Sendable {
    package let child: ChildProcess

    package init(
        socketPath: String, bundleIdentifier: String, group: String, environment: [String: String] = [:]
    ) throws {
        var env = environment
        env["BA_SOCKET"] = socketPath
        env["BA_BUNDLE_IDENTIFIER"] = bundleIdentifier
        env["BA_TEST_APP_GROUP"] = group
        child = try ChildProcess(BuildProducts.executable("BATestApp"), [], environment: env, input: .pipe)
        do {
            try child.wait("the app's ready line", timeout: 20) { $0.stdoutLines.contains { $0.contains("\"ready\"") } }
        } catch {
            child.kill()
            throw error
        }
    }

    package var pid: Int32 { child.pid }

    package func send(_ line: String) { child.send(line) }

    /// The parsed lines so far.
    package var lines: [AppLine] { child.stdoutLines.compactMap(AppLine.init) }

    /// Waits until `count` lines match `predicate`; returns the matching ones. The wait is on a
    /// thread of its own, not on the concurrency pool (``offThePool(_:)``).
    @discardableResult
    package func wait(
        timeout: Double = 30, _ what: String, count: Int = 1, where predicate: @escaping (AppLine) -> Bool
    ) async throws -> [AppLine] {
        try await offThePool { try self.waitBlocking(timeout: timeout, what, count: count, where: predicate) }
    }

    /// Sends a command and returns its result line, waiting off the concurrency pool.
    package func run(_ line: String, timeout: Double = 30) async throws -> AppLine {
        try await offThePool { try self.runBlocking(line, timeout: timeout) }
    }

    /// ``wait(timeout:_:count:where:)`` on the calling thread.
    @discardableResult
    package func waitBlocking(
        timeout: Double = 30, _ what: String, count: Int = 1, where predicate: @escaping (AppLine) -> Bool
    ) throws -> [AppLine] {
        try child.wait(what, timeout: timeout) { child in
            child.stdoutLines.compactMap(AppLine.init).filter(predicate).count >= count
        }
        return lines.filter(predicate)
    }

    /// Sends a command and returns its result line (the `count`-th result of that command so far).
    package func runBlocking(_ line: String, timeout: Double = 30) throws -> AppLine {
        let command = String(line.split(separator: " ").first ?? "")
        let before = lines.filter { $0.command == command && $0["event"] == nil }.count
        send(line)
        return try waitBlocking(timeout: timeout, "the result of \(line)", count: before + 1) {
            $0.command == command && $0["event"] == nil
        }[before]
    }

    package func kill() { child.kill() }
}
