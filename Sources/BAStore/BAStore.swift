import Foundation
internal import GRDB
import Synchronization

/// basd's durable state in one SQLite file: registered apps, downloads, the event log owed to
/// apps and extensions, and the history of extension calls.
///
/// **Committed before acknowledged.** Every operation is one transaction, committed before it
/// returns: once a call returns, a `kill -9` of the process cannot undo it, and a power loss only
/// within the moment before ``LogSync`` fsyncs the log on its own thread (``waitUntilDurable()``
/// waits for that). When a call throws, none of it was committed. Each
/// change to a download that the app must hear about appends its ``StoredEvent`` in the same
/// transaction, so a crash never leaves a state change without its event or the reverse.
///
/// The file is in WAL mode (readers never block the writer) with foreign keys on and a busy
/// timeout. Its schema is versioned by migrations (see `docs/state.md`); a file from a newer
/// version is refused with ``BAStoreError/Code/schemaTooNew``.
///
/// Calls block the calling thread for the commit (typically well under a millisecond; the fsync
/// happens on the log-sync thread). The store is safe to use from any thread; writes are serialized.
///
/// ```swift
/// let store = try BAStore.open(path: stateDirectory + "/state.sqlite")
/// try store.register(StoredApp(bundleIdentifier: "com.example.game", version: "1.0",
///                              appDirectory: "/opt/game"))
/// try store.schedule(StoredDownload(appIdentifier: "com.example.game", identifier: "level-1",
///                                   url: "https://cdn.example.com/level-1.pak"))
/// for download in try store.activeDownloads() { engine.add(...) }   // after a restart too
/// ```
package final class BAStore: Sendable {
    /// The database file.
    package let path: String

    /// Blocks until every commit made so far is on stable storage (fsynced).
    package func waitUntilDurable() { logSync.waitUntilSynced() }

    /// Commits made since the store was opened, and how many of them are fsynced.
    package var durability: (committed: UInt64, synced: UInt64) { logSync.counts }
    let pool: DatabasePool
    let clock: @Sendable () -> Date
    /// ``close()`` was called.
    private let isClosed = Atomic<Bool>(false)

    /// The newest schema version this build knows (a file of a newer one is refused).
    package static var schemaVersion: Int { Schema.currentVersion }

    /// fsyncs the `-wal` file after commits, on a thread of its own.
    let logSync: LogSync
    /// Where the store reports what it cannot fix itself (a checkpoint that failed at close).
    let log: @Sendable (String) -> Void

    private init(
        path: String, pool: DatabasePool, clock: @escaping @Sendable () -> Date,
        log: @escaping @Sendable (String) -> Void
    ) {
        self.path = path
        self.pool = pool
        self.clock = clock
        self.logSync = LogSync(databasePath: path, log: log)
        self.log = log
    }

    deinit { logSync.stop() }

    /// Opens the store at `path`, creating the file (mode 0600) and its folder (mode 0700) if
    /// needed, and brings its schema to ``schemaVersion``.
    ///
    /// Opening a file that a killed process left behind is safe: SQLite rolls back the
    /// transaction that was in flight and keeps every committed one.
    ///
    /// - Parameters:
    ///   - path: The database file, e.g. `$XDG_DATA_HOME/background-assets/state.sqlite`.
    ///   - clock: Where the store's timestamps come from (tests pass a fixed clock).
    ///   - vet: Called with what the file held, after the integrity check and before anything is
    ///     written to it (no migration has run yet); throw to refuse the file, which is then closed
    ///     unchanged. basd refuses an empty store while app group containers exist
    ///     (``BAStoreError/Code/stateLost``).
    /// - Throws: ``BAStoreError`` with ``BAStoreError/Code/schemaTooNew`` when the file was
    ///   written by a newer version, ``BAStoreError/Code/corrupt`` when it fails SQLite's
    ///   `quick_check`, ``BAStoreError/Code/database`` when it cannot be opened or is not a
    ///   database, or what `vet` threw.
    package static func open(
        path: String, clock: @escaping @Sendable () -> Date = { Date() },
        vet: (OpeningContents) throws(BAStoreError) -> Void = { _ in },
        log: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data("BAStore: \($0)\n".utf8)) }
    ) throws(BAStoreError)
        -> BAStore
    {
        try prepareFile(at: path)
        // Read-only steps first, on a read-only connection: GRDB's pool writes to a missing or
        // empty -wal as it opens (a table created and dropped), and a refused file must be left
        // as it was found, so that a -wal the user puts back still applies.
        try vet(try inspect(path: path))
        var configuration = Configuration()
        configuration.label = "BAStore"
        configuration.foreignKeysEnabled = true
        // Another process (a second basd, a `ba` reading state) may hold the write lock briefly.
        configuration.busyMode = .timeout(5)
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // `synchronous = NORMAL` (GRDB sets it with WAL): a commit is written to the -wal
            // file, which survives a kill -9 at once; ``LogSync`` fsyncs that file after commits
            // on a thread of its own, for a power loss (docs/state.md, "Durability").
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        } catch {
            throw mapError(error, path: path, doing: "opening the database")
        }
        let store = BAStore(path: path, pool: pool, clock: clock, log: log)
        do throws(BAStoreError) {
            try store.migrate()
        } catch {
            try? store.close()
            throw error
        }
        return store
    }

    /// Closes the database. Later calls fail with ``BAStoreError/Code/database``. Also happens
    /// when the store is deinitialized.
    package func close() throws(BAStoreError) {
        do {
            // Everything into the main file, and the -wal truncated: after a clean stop the file
            // alone is the whole store (docs/state.md, "Backing up the store"). SQLite's own
            // checkpoint at the last close does not happen while cached statements keep the
            // connection open. Best effort: a reader of another process may hold the log.
            // Once only: GRDB's checkpoint on a closed connection dereferences a null handle.
            if !isClosed.exchange(true, ordering: .acquiringAndReleasing) {
                logSync.waitUntilSynced()
                logSync.stop()
                do {
                    _ = try pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
                } catch {
                    log("the checkpoint at close failed, the -wal stays (SQLite applies it at the next open): \(error)")
                }
            }
            try pool.close()
        } catch {
            throw Self.mapError(error, path: path, doing: "closing the database")
        }
    }

    // MARK: - Opening

    /// Creates the folder (0700) and an empty file (0600) if they are missing, so the -wal and
    /// -shm files SQLite creates inherit the file's private mode.
    private static func prepareFile(at path: String) throws(BAStoreError) {
        let files = FileManager.default
        if files.fileExists(atPath: path) { return }
        let directory = (path as NSString).deletingLastPathComponent
        do {
            if !directory.isEmpty && !files.fileExists(atPath: directory) {
                try files.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
        } catch {
            throw BAStoreError(
                .database, "cannot create the folder \(directory): check that its parent is writable", path: path,
                cause: error)
        }
        // An empty file is a valid empty database. If another process created it meanwhile, fine.
        if !files.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
            && !files.fileExists(atPath: path)
        {
            throw BAStoreError(
                .database, "cannot create the database file: check that \(directory) is writable", path: path)
        }
    }

    /// Most findings of `quick_check` put in a message.
    static let reportedFindings = 5

    /// `PRAGMA quick_check`, then what the file holds, on a read-only connection that writes
    /// nothing. `quick_check` reads every page of every table and index and checks its structure
    /// (it skips only matching index entries to rows, which `integrity_check` adds at several times
    /// the cost). Throws ``BAStoreError/Code/corrupt`` naming what it found.
    private static func inspect(path: String) throws(BAStoreError) -> OpeningContents {
        var configuration = Configuration()
        configuration.label = "BAStore.inspect"
        configuration.readonly = true
        configuration.busyMode = .timeout(5)
        let result: (findings: [String], contents: OpeningContents)
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            result = try queue.read { db in
                let findings = try String.fetchAll(db, sql: "PRAGMA quick_check(\(reportedFindings))")
                guard findings == ["ok"] else {
                    return (findings, OpeningContents(hasSchema: false, appCount: 0, hasHistory: false))
                }
                return (findings, try openingContents(db))
            }
        } catch {
            throw mapError(error, path: path, doing: "checking the database's integrity")
        }
        guard result.findings == ["ok"] else {
            throw corrupt(path: path, findings: result.findings.isEmpty ? ["no answer"] : result.findings)
        }
        return result.contents
    }

    /// The error for a damaged file: what SQLite found and the three ways out.
    static func corrupt(path: String, findings: [String], cause: (any Error)? = nil) -> BAStoreError {
        let shown = findings.prefix(reportedFindings).joined(separator: "; ")
        let folder = (path as NSString).deletingLastPathComponent
        let recovered = (folder as NSString).appendingPathComponent("recovered.sqlite")
        return BAStoreError(
            .corrupt,
            "the database \(path) is damaged (SQLite found: \(shown)); basd does not serve a damaged store, "
                + "which would lose or misread downloads. With basd stopped, either restore the file from a backup "
                + "(docs/operations.md, \"Backups\"), or keep what is readable: `sqlite3 \(path) .recover "
                + "| sqlite3 \(recovered)`, then move \(recovered) in its place and delete its -wal and -shm files; "
                + "or start over: move \(path) and its -wal and -shm files aside and install the apps again "
                + "(`ba install`)",
            path: path, cause: cause)
    }

    /// What the file holds, read before any migration (on a file without tables: nothing).
    private static func openingContents(_ db: Database) throws -> OpeningContents {
        let tables = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"))
        var contents = OpeningContents(hasSchema: tables.contains("app"), appCount: 0, hasHistory: false)
        if contents.hasSchema {
            contents.appCount = try Int.fetchOne(db, sql: "SELECT count(*) FROM app") ?? 0
        }
        if tables.contains("sqlite_sequence") {
            // AUTOINCREMENT keeps the highest id ever given, also after its rows are pruned (a
            // table rebuilt by a migration leaves a row with 0).
            contents.hasHistory =
                try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM sqlite_sequence WHERE seq > 0)") ?? false
        }
        return contents
    }

    /// Refuses a newer schema, then applies the missing migrations (each in its own transaction).
    private func migrate() throws(BAStoreError) {
        let migrator = Schema.migrator
        let found: (version: Int, unknown: [String])
        do {
            found = try pool.read { db in
                let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
                let unknown = try migrator.appliedIdentifiers(db).subtracting(migrator.migrations)
                return (version, unknown.sorted())
            }
        } catch {
            throw Self.mapError(error, path: path, doing: "reading the schema version")
        }
        if found.version > Schema.currentVersion || !found.unknown.isEmpty {
            let migrations = found.unknown.isEmpty ? "" : " (migrations \(found.unknown.joined(separator: ", ")))"
            throw BAStoreError(
                .schemaTooNew,
                "the database has schema version \(found.version)\(migrations), but this version of "
                    + "swift-background-assets knows schema versions up to \(Schema.currentVersion); run the newer "
                    + "basd that wrote it, or move the file aside to start with an empty state",
                path: path)
        }
        do {
            try migrator.migrate(pool)
        } catch {
            throw Self.mapError(error, path: path, doing: "migrating the schema to version \(Schema.currentVersion)")
        }
    }

    // MARK: - Transactions

    /// Runs `body` in one immediate transaction and commits it before returning; rolls back if
    /// it throws. Inside ``batch(_:_:)`` it is a savepoint of the batch's transaction instead.
    func write<T>(_ doing: String, _ body: (Database) throws -> T) throws(BAStoreError) -> T {
        do {
            if let batch = Self.currentBatch {
                var result: T?
                try batch.db.inSavepoint {
                    result = try body(batch.db)
                    return .commit
                }
                guard let result else {
                    throw BAStoreError(.database, "\(doing): the savepoint returned nothing", path: path)
                }
                return result
            }
            let result = try pool.write(body)
            logSync.committed()
            return result
        } catch {
            throw Self.mapError(error, path: path, doing: doing)
        }
    }

    /// Runs `body` on the last committed state (inside a batch: on the batch's connection, which
    /// sees the batch's own changes).
    ///
    /// On the writer's connection, outside a transaction: basd is the only writer and makes its
    /// store calls one at a time, so nothing can change between the statements of `body`, and a
    /// read costs no transaction of its own and no hop to a reader connection (a read runs for
    /// every request).
    func read<T>(_ doing: String, _ body: (Database) throws -> T) throws(BAStoreError) -> T {
        do {
            if let batch = Self.currentBatch { return try body(batch.db) }
            return try pool.writeWithoutTransaction(body)
        } catch {
            throw Self.mapError(error, path: path, doing: doing)
        }
    }

    /// Group commit: every store call `body` makes (on this thread) joins one transaction,
    /// committed (one fsync) when `body` returns. A call that throws inside is rolled back alone
    /// (a savepoint) and the others stay; if the commit itself fails, nothing of the batch is
    /// stored, and this throws.
    ///
    /// What the calls return is not durable before this returns: tell no one about it inside
    /// `body`.
    package func batch<T>(_ doing: String, _ body: () throws -> T) throws(BAStoreError) -> T {
        do {
            let result = try pool.write { db in
                try Self.$currentBatch.withValue(BatchConnection(db: db)) { try body() }
            }
            logSync.committed()
            return result
        } catch {
            throw Self.mapError(error, path: path, doing: doing)
        }
    }

    /// The connection of the batch running on this thread, if any.
    @TaskLocal static var currentBatch: BatchConnection?

    /// A batch's connection, only ever used on the thread that runs the batch.
    final class BatchConnection: @unchecked Sendable {
        let db: Database
        init(db: Database) { self.db = db }
    }

    /// The store's current time.
    var now: Date { clock() }

    /// A ``BAStoreError`` for any error a transaction threw (store errors pass through).
    static func mapError(_ error: any Error, path: String, doing: String) -> BAStoreError {
        if let error = error as? BAStoreError { return error }
        guard let error = error as? DatabaseError else {
            return BAStoreError(.database, "\(doing) failed", path: path, cause: error)
        }
        let advice: String
        switch error.resultCode {
        case .SQLITE_NOTADB: advice = "the file is not an SQLite database: check the path, or move the file aside"
        case .SQLITE_CORRUPT:
            return corrupt(path: path, findings: ["\(doing): \(error.message ?? "corrupt")"], cause: error)
        case .SQLITE_FULL: advice = "the disk is full: free space and retry"
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            advice = "another process held the database locked for too long (is a second basd running?)"
        case .SQLITE_READONLY: advice = "the database is read-only: check the file's and folder's permissions"
        case .SQLITE_CANTOPEN: advice = "cannot open the file: check that the folder exists and is writable"
        case .SQLITE_IOERR: advice = "an I/O error: check the disk"
        default: advice = "SQLite failed"
        }
        return BAStoreError(.database, "\(doing): \(advice)", path: path, cause: error)
    }
}

extension BAStore {
    /// The writer connection's settings (`journal_mode`, `synchronous`, `foreign_keys`,
    /// `busy_timeout`, `user_version`), for tests and diagnostics.
    package func connectionSettings() throws(BAStoreError) -> [String: String] {
        do {
            return try pool.writeWithoutTransaction { db in
                var settings: [String: String] = [:]
                for name in ["journal_mode", "synchronous", "foreign_keys", "busy_timeout", "user_version"] {
                    settings[name] = try String.fetchOne(db, sql: "PRAGMA \(name)")
                }
                return settings
            }
        } catch {
            throw Self.mapError(error, path: path, doing: "reading the connection settings")
        }
    }

    /// `PRAGMA integrity_check`: `["ok"]` for a sound file, else SQLite's findings.
    package func integrityCheck() throws(BAStoreError) -> [String] {
        try read("checking integrity") { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
    }
}

extension BAStore {
    /// The page size and the number of the first page (the b-tree root) of `table`: tests damage
    /// that page to check that a damaged file is refused.
    package func rootPage(of table: String) throws(BAStoreError) -> (pageSize: Int, page: Int) {
        try read("finding the root page of \(table)") { db in
            let size = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0
            let page =
                try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = ?", arguments: [table]) ?? 0
            return (size, page)
        }
    }
}
