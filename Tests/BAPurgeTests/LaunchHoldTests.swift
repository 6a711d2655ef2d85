import Foundation
import Testing

@testable import BAPurge

#if canImport(Glibc)
    import Glibc
#endif

/// Essential and pre-launch files are kept until the app launches (issue 23): the rule at delivery
/// as a table, and what the planner makes of a held file in each state, with real files.
@Suite struct LaunchHoldTests {
    struct DeliveryRow: Sendable, CustomTestStringConvertible {
        var essential: Bool
        var appHasLaunched: Bool
        var hold: LaunchHold?
        var testDescription: String {
            "\(essential ? "essential" : "non-essential"), app \(appHasLaunched ? "launched" : "never launched") → "
                + "\(hold?.rawValue ?? "no hold")"
        }
    }

    @Test(
        "the hold a file gets at delivery",
        arguments: [
            // Before the first launch every file is held: nothing of the app has run to fetch it again.
            DeliveryRow(essential: true, appHasLaunched: false, hold: .firstLaunch),
            DeliveryRow(essential: false, appHasLaunched: false, hold: .firstLaunch),
            // After it, an essential one (an update's) until the app launches again; the rest not.
            DeliveryRow(essential: true, appHasLaunched: true, hold: .essential),
            DeliveryRow(essential: false, appHasLaunched: true, hold: nil),
        ])
    func atDelivery(_ row: DeliveryRow) {
        #expect(LaunchHold.atDelivery(essential: row.essential, appHasLaunched: row.appHasLaunched) == row.hold)
    }

    /// What happens to the file after delivery, before the plan.
    enum FileState: String, Sendable, CaseIterable {
        /// Moved into the container by the app (or its extension), untouched.
        case moved
        /// Still at its delivery path.
        case atDeliveryPath
        /// Moved and then written to.
        case modified
        /// Moved and held open by this process.
        case open
        /// Deleted by the app.
        case deleted
    }

    struct PlanRow: Sendable, CustomTestStringConvertible {
        var hold: LaunchHold?
        var file: FileState
        var status: String
        var reason: String
        var testDescription: String { "\(hold?.rawValue ?? "not held"), \(file.rawValue) → \(status)" }
    }

    static let planRows: [PlanRow] = [
        PlanRow(
            hold: .firstLaunch, file: .moved, status: "awaitingLaunch", reason: "kept: the app has not launched yet"),
        PlanRow(
            hold: .essential, file: .moved, status: "awaitingLaunch",
            reason: "kept: essential, and the app has not launched since it was delivered"),
        PlanRow(hold: nil, file: .moved, status: "purgeable", reason: "purgeable: "),
        // A file still owed to the app says so first: that is what the app waits for.
        PlanRow(
            hold: .firstLaunch, file: .atDeliveryPath, status: "pendingDelivery",
            reason: "kept: not yet delivered to the app"),
        // A modified file is the app's (and basd forgets it), held or not.
        PlanRow(hold: .firstLaunch, file: .modified, status: "modified", reason: "kept: modified (size 100 → 104)"),
        PlanRow(hold: .essential, file: .modified, status: "modified", reason: "kept: modified (size 100 → 104)"),
        // Held whoever has it open.
        PlanRow(
            hold: .essential, file: .open, status: "awaitingLaunch",
            reason: "kept: essential, and the app has not launched since it was delivered"),
        PlanRow(hold: nil, file: .open, status: "inUse", reason: "kept: open by pid \(getpid())"),
        // A file the app deleted is gone: nothing to keep (and basd forgets it).
        PlanRow(
            hold: .firstLaunch, file: .deleted, status: "missing", reason: "gone: no longer in the app group container"),
    ]

    @Test("a held file in each state, under disk pressure", arguments: planRows)
    func plan(_ row: PlanRow) throws {
        let container = try TestContainer()
        defer { container.remove() }
        var asset = try container.deliver("config")
        asset.heldUntilLaunch = row.hold
        let moved = container.root + "/Library/config"
        if row.file != .atDeliveryPath {
            try FileManager.default.moveItem(atPath: asset.deliveredPath, toPath: moved)
        }
        if row.file == .modified { try container.append(to: moved) }
        if row.file == .deleted { try FileManager.default.removeItem(atPath: moved) }
        let handle = row.file == .open ? FileHandle(forReadingAtPath: moved) : nil
        defer { try? handle?.close() }

        let plan = PurgePlanner().plan(assets: [asset], roots: [container.root], freeBytes: 0, thresholdBytes: 1 << 40)
        let entry = try #require(plan.entries.first)
        #expect(entry.status.name == row.status)
        #expect(entry.reason.hasPrefix(row.reason), "\(entry.reason)")
        #expect(entry.willDelete == (row.status == "purgeable"))
        #expect(plan.deletions.count == (row.status == "purgeable" ? 1 : 0))
        #expect(plan.purgeableBytes == (row.status == "purgeable" ? 100 : 0), "a held file is not counted purgeable")
        if row.status == "awaitingLaunch" {
            #expect(entry.status == .awaitingLaunch(path: moved, hold: try #require(row.hold)))
            #expect(entry.path == moved && entry.size == 100)
        }
    }

    @Test func aHeldFileIsPassedOverAndTheNextOneGoes() throws {
        let container = try TestContainer()
        defer { container.remove() }
        // The held file is the least recently used: without the hold it would go first.
        var (config, configPath) = try container.deliverAndMove("config", accessed: day(1))
        config.heldUntilLaunch = .firstLaunch
        let (level, levelPath) = try container.deliverAndMove("level-2", accessed: day(5))

        let plan = PurgePlanner().plan(
            assets: [config, level], roots: [container.root], freeBytes: 1000, thresholdBytes: 1050)
        #expect(plan.deletions.map(\.asset.identifier) == ["level-2"])
        let results = Purger().execute(plan)
        #expect(results.map(\.outcome) == [.deleted(bytes: 100)])
        #expect(FileManager.default.fileExists(atPath: configPath))
        #expect(!FileManager.default.fileExists(atPath: levelPath))

        // Released (the app launched): the usual rules, so it goes.
        config.heldUntilLaunch = nil
        let later = PurgePlanner().plan(
            assets: [config], roots: [container.root], freeBytes: 1000, thresholdBytes: 1050)
        #expect(later.deletions.map(\.asset.identifier) == ["config"])
    }

    @Test func theSummaryAndTheRecordCarryTheHold() throws {
        let container = try TestContainer()
        defer { container.remove() }
        var (asset, path) = try container.deliverAndMove("config", finishedAt: day(20), accessed: day(21))
        asset.heldUntilLaunch = .essential
        let summary = PurgeSummary(
            PurgePlanner().plan(assets: [asset], roots: [container.root], freeBytes: 0, thresholdBytes: 1 << 40))
        #expect(
            summary.assets == [
                PurgeSummary.Asset(
                    appID: "com.example.test", identifier: "config", downloadUniqueID: asset.downloadUniqueID,
                    path: path, size: 100, status: "awaitingLaunch",
                    reason: "kept: essential, and the app has not launched since it was delivered", wouldDelete: false)
            ])
        #expect(try JSONDecoder().decode(TrackedAsset.self, from: JSONEncoder().encode(asset)) == asset)
        // A record written before holds existed decodes as not held.
        var plain = asset
        plain.heldUntilLaunch = nil
        var object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(plain)) as? [String: Any])
        object["heldUntilLaunch"] = nil
        #expect(
            try JSONDecoder().decode(TrackedAsset.self, from: JSONSerialization.data(withJSONObject: object)) == plain)
    }
}
