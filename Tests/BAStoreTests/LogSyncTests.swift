import BAStore
import Foundation
import Testing

/// Commits are fsynced by the store's log-sync thread, not by the caller (docs/state.md,
/// "Durability"): every commit is counted, a batch is one commit, and the thread catches up
/// with the commits on its own.
@Suite("BAStore log sync") struct LogSyncTests {
    @Test func everyCommitIsSyncedByTheLogSyncThread() async throws {
        let test = try TestStore()
        defer { test.remove() }
        let opened = test.store.durability.committed
        try test.registerApp()
        for index in 0..<50 { _ = try test.schedule("d\(index)") }
        #expect(test.store.durability.committed == opened + 51, "one commit per call")
        try test.store.batch("three in one") {
            for index in 50..<53 { _ = try test.schedule("d\(index)") }
        }
        let committed = test.store.durability.committed
        #expect(committed == opened + 52, "a batch is one commit")
        // Nobody waits: the thread syncs on its own (bounded poll).
        var polls = 0
        while test.store.durability.synced < committed {
            polls += 1
            try #require(polls < 10_000, "the log-sync thread did not catch up: \(test.store.durability)")
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(test.store.durability.synced == committed)
    }

    @Test func waitUntilDurableCoversTheCommitsBeforeIt() throws {
        let test = try TestStore()
        defer { test.remove() }
        try test.registerApp()
        for index in 0..<20 {
            _ = try test.schedule("d\(index)")
            test.store.waitUntilDurable()
            let (committed, synced) = test.store.durability
            #expect(synced >= committed, "after \(index + 1) schedules")
        }
    }
}
