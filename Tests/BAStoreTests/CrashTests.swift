import BAStore
import BATestSupport
import Foundation
import GRDB
import Testing

/// `kill -9` of a process in the middle of writing: what it acknowledged must all be there.
@Suite("BAStore crash safety", .timeLimit(.minutes(1))) struct CrashTests {
    /// Runs the probe until it has acknowledged at least `lines` writes, then kills it with
    /// SIGKILL (it is still writing: it has far more to do). Returns every line it printed.
    func runProbeAndKill(database: String, prefix: String, lines wanted: Int) throws -> [String] {
        // Its stdin a pipe kept open: the probe exits by itself only when its stdin closes.
        let probe = try ChildProcess(
            BuildProducts.executable("BAStoreCrashProbe"), [database, "1000000", prefix], input: .pipe)
        defer { probe.kill() }
        // Throws with its stderr when the probe stopped early.
        try probe.wait("\(wanted) acknowledged writes") { $0.stdoutLines.count >= wanted }
        probe.signal(SIGKILL)
        #expect(probe.waitForTermination() == .signalled(SIGKILL))
        return probe.stdoutLines
    }

    @Test func aKilledWriterLosesNothingItAcknowledged() throws {
        let test = try TestStore()
        defer { test.remove() }
        let database = test.directory.appendingPathComponent("crash.sqlite").path
        var acknowledgedScheduled = Set<String>()
        var acknowledgedFinished = Set<String>()
        // Three rounds on one file: each reopens what the previous kill left, then writes more.
        for round in 0..<3 {
            let lines = try runProbeAndKill(database: database, prefix: "round\(round)", lines: 30)
            for line in lines {
                let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                guard parts.count == 2 else { continue }
                if parts[0] == "scheduled" { acknowledgedScheduled.insert(parts[1]) }
                if parts[0] == "finished" { acknowledgedFinished.insert(parts[1]) }
            }

            let store = try BAStore.open(path: database)
            #expect(try store.integrityCheck() == ["ok"])
            #expect(try store.connectionSettings()["user_version"] == String(BAStore.schemaVersion))
            let downloads = try store.downloads(app: "com.example.probe")
            let byID = Dictionary(uniqueKeysWithValues: downloads.map { ($0.uniqueIdentifier, $0) })
            #expect(downloads.count >= acknowledgedScheduled.count)
            for id in acknowledgedScheduled { #expect(byID[id] != nil, "acknowledged download \(id) lost") }
            for id in acknowledgedFinished { #expect(byID[id]?.state == .finished, "acknowledged end of \(id) lost") }
            try store.close()

            // Acknowledged or not, no state change exists without its event, nor the reverse.
            let (finishedWithout, eventsWithout) = try TestStore.inspect(database) { db in
                (
                    try Int.fetchOne(
                        db,
                        sql: """
                            SELECT count(*) FROM download d
                            WHERE (d.state = 3) != ((SELECT count(*) FROM event e
                                                     WHERE e.download_id = d.unique_identifier
                                                     AND e.kind = 'finished') = 1)
                            """) ?? -1,
                    try Int.fetchOne(
                        db,
                        sql: """
                            SELECT count(*) FROM event e JOIN download d ON d.unique_identifier = e.download_id
                            WHERE d.state != 3 OR e.kind != 'finished'
                            """) ?? -1
                )
            }
            #expect(finishedWithout == 0 && eventsWithout == 0, "round \(round)")
        }
    }
}
