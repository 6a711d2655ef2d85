import BAStore
import Foundation
import GRDB
import Synchronization
import Testing

/// A clock that moves only when told to, so timestamps and orderings are exact.
final class TestClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_700_000_000))
    var now: Date { current.withLock { $0 } }
    func advance(seconds: TimeInterval = 1) { current.withLock { $0 += seconds } }
}

/// A store in a fresh temporary directory, with a test clock; `remove()` deletes everything.
struct TestStore {
    let directory: URL
    let path: String
    let clock = TestClock()
    let store: BAStore

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ba-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("state.sqlite").path
        let clock = self.clock
        store = try BAStore.open(path: path, clock: { clock.now })
    }

    func remove() {
        try? store.close()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Reads the file through a connection of its own: what another process would see.
    func inspect<T>(_ body: (Database) throws -> T) throws -> T {
        try Self.inspect(path, body)
    }

    /// Writes through a connection of its own (to set up what the store would never write).
    func tamper(_ body: (Database) throws -> Void) throws {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction(body)
    }

    static func inspect<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read(body)
    }

    func count(_ sql: String, _ arguments: StatementArguments = []) throws -> Int {
        try inspect { db in try Int.fetchOne(db, sql: sql, arguments: arguments) ?? 0 }
    }

    /// The `payload` column of event `event`, as the store wrote it.
    func payload(_ event: StoredEvent) throws -> String? {
        try inspect { db in
            try String.fetchOne(db, sql: "SELECT payload FROM event WHERE sequence = ?", arguments: [event.sequence])
        }
    }

    @discardableResult
    func registerApp(_ bundleIdentifier: String = "com.example.game") throws -> StoredApp? {
        try store.register(
            StoredApp(
                bundleIdentifier: bundleIdentifier, version: "1.0", appGroupIdentifier: "group.\(bundleIdentifier)",
                appDirectory: "/opt/\(bundleIdentifier)", extensionPath: "/opt/\(bundleIdentifier)/libExt.so"))
    }

    @discardableResult
    func schedule(
        _ identifier: String, app: String = "com.example.game", priority: Int64 = 50, essential: Bool = false
    ) throws -> StoredDownload {
        try store.schedule(
            StoredDownload(
                appIdentifier: app, identifier: identifier, url: "https://cdn.example.com/\(identifier)",
                priority: priority, isEssential: essential))
    }
}

/// Expects `body` to throw a ``BAStoreError`` with `code`; returns it.
@discardableResult
func expectStoreError(
    _ code: BAStoreError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> BAStoreError? {
    let error = #expect(throws: BAStoreError.self, sourceLocation: sourceLocation) { try body() }
    #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
    return error
}
