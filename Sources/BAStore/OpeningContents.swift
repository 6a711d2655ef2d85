/// What a store file held when ``BAStore/open(path:clock:vet:)`` opened it, read before any
/// migration writes to it.
package struct OpeningContents: Sendable, Equatable {
    /// The file has basd's tables: false for a file created now, and for one whose tables are
    /// only in a `-wal` file that is missing (a store never checkpointed, copied without its `-wal`).
    package var hasSchema: Bool
    /// Registered apps.
    package var appCount: Int
    /// Whether the store ever recorded an event or an extension call (SQLite's `sqlite_sequence`,
    /// which keeps the highest id given even after the rows were pruned).
    package var hasHistory: Bool

    /// Creates a value (tests).
    package init(hasSchema: Bool, appCount: Int, hasHistory: Bool) {
        self.hasSchema = hasSchema
        self.appCount = appCount
        self.hasHistory = hasHistory
    }

    /// Whether the file holds nothing that could be lost: no apps and no history (or no tables).
    package var isEmpty: Bool { appCount == 0 && !hasHistory }
}
