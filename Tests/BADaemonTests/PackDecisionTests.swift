import BACore
import BAPacks
import BAStore
import Foundation
import Testing

@testable import BADaemon

/// `PackDecision` as a table: Apple's policies for each trigger, with and without a local
/// version, and what happens to packs the manifest no longer lists.
@Suite("asset pack decisions")
struct PackDecisionTests {
    typealias Policy = PackManifest.DownloadPolicy

    struct Row: CustomStringConvertible {
        var policy: Policy?
        var server: Int?
        var local: Int?
        var requested = false
        var declined = false
        var trigger: PackDecision.Trigger
        var expected: PackDecision.Action
        var description: String {
            "\(policy.map { "\($0)" } ?? "unlisted") server \(server ?? -1) local \(local ?? -1) \(trigger)"
                + (declined ? " declined" : "")
        }
    }

    static let both: Set<PackManifest.InstallationEvent> = [.firstInstallation, .subsequentUpdate]
    static let first: Set<PackManifest.InstallationEvent> = [.firstInstallation]
    static let update: Set<PackManifest.InstallationEvent> = [.subsequentUpdate]

    static let rows: [Row] = [
        // First installation: essential and prefetch of the event come, on-demand waits.
        Row(
            policy: .essential(both), server: 1, local: nil, trigger: .installation(.firstInstallation),
            expected: .download(essential: true)),
        Row(
            policy: .essential(update), server: 1, local: nil, trigger: .installation(.firstInstallation),
            expected: .none),
        Row(
            policy: .prefetch(first), server: 1, local: nil, trigger: .installation(.firstInstallation),
            expected: .download(essential: false)),
        Row(policy: .onDemand, server: 1, local: nil, trigger: .installation(.firstInstallation), expected: .none),
        // Already current: nothing, whatever the policy.
        Row(policy: .essential(both), server: 2, local: 2, trigger: .installation(.subsequentUpdate), expected: .none),
        // Subsequent update: the event's essential packs block, local packs of other policies update in the background.
        Row(
            policy: .essential(both), server: 2, local: 1, trigger: .installation(.subsequentUpdate),
            expected: .download(essential: true)),
        Row(
            policy: .essential(first), server: 2, local: 1, trigger: .installation(.subsequentUpdate),
            expected: .download(essential: false)),
        Row(
            policy: .essential(first), server: 2, local: nil, trigger: .installation(.subsequentUpdate), expected: .none
        ),
        Row(
            policy: .onDemand, server: 2, local: 1, trigger: .installation(.subsequentUpdate),
            expected: .download(essential: false)),
        Row(
            policy: .prefetch(update), server: 1, local: nil, trigger: .installation(.subsequentUpdate),
            expected: .download(essential: false)),
        // Periodic: local ones update; install-time packs that never arrived are tried again; on-demand only if asked.
        Row(policy: .onDemand, server: 3, local: 2, trigger: .periodic, expected: .download(essential: false)),
        Row(policy: .onDemand, server: 3, local: 3, trigger: .periodic, expected: .none),
        Row(policy: .onDemand, server: 3, local: nil, trigger: .periodic, expected: .none),
        Row(
            policy: .onDemand, server: 3, local: nil, requested: true, trigger: .periodic,
            expected: .download(essential: false)),
        Row(policy: .prefetch(first), server: 1, local: nil, trigger: .periodic, expected: .download(essential: false)),
        Row(policy: .essential(update), server: 1, local: nil, trigger: .periodic, expected: .none),
        // A request: at once if not local; an update only with requireLatest.
        Row(
            policy: .onDemand, server: 1, local: nil, trigger: .ensure(requireLatest: false),
            expected: .download(essential: true)),
        Row(policy: .onDemand, server: 2, local: 1, trigger: .ensure(requireLatest: false), expected: .none),
        Row(
            policy: .onDemand, server: 2, local: 1, trigger: .ensure(requireLatest: true),
            expected: .download(essential: true)),
        Row(policy: .onDemand, server: 2, local: 2, trigger: .ensure(requireLatest: true), expected: .none),
        // No longer listed: a local version is obsolete; nothing local, the row goes.
        Row(policy: nil, server: nil, local: 4, trigger: .periodic, expected: .removeObsolete),
        Row(policy: nil, server: nil, local: nil, trigger: .installation(.subsequentUpdate), expected: .forget),
        // Declined by the extension (shouldDownload): not by the event, not retried periodically,
        // but a request downloads it, and a requested pack is kept as requested.
        Row(
            policy: .essential(both), server: 1, local: nil, declined: true, trigger: .installation(.firstInstallation),
            expected: .none),
        Row(
            policy: .prefetch(first), server: 1, local: nil, declined: true, trigger: .installation(.firstInstallation),
            expected: .none),
        Row(
            policy: .essential(both), server: 2, local: 1, declined: true, trigger: .installation(.subsequentUpdate),
            expected: .none),
        Row(policy: .prefetch(first), server: 1, local: nil, declined: true, trigger: .periodic, expected: .none),
        Row(
            policy: .prefetch(first), server: 1, local: nil, requested: true, declined: true, trigger: .periodic,
            expected: .download(essential: false)),
        Row(
            policy: .essential(both), server: 1, local: nil, declined: true, trigger: .ensure(requireLatest: false),
            expected: .download(essential: true)),
    ]

    @Test("each policy and trigger", arguments: rows)
    func decide(_ row: Row) {
        let action = PackDecision.action(
            policy: row.policy, serverVersion: row.server, localVersion: row.local, requested: row.requested,
            trigger: row.trigger, declined: row.declined)
        #expect(action == row.expected, "\(row)")
    }
}

/// For services tested alone that need a ``PackService`` and use no packs: every fetch fails.
final class NoPackTransfers: PackTransfers {
    var backgroundHold: NetworkConditions.Hold? { nil }
    func fetchPackFile(
        _ fetch: TransferCoordinator.PackFetch, for app: StoredApp,
        done: @escaping (Result<String, TransferCoordinator.PackFetchFailure>) -> Void
    ) {
        done(.failure(.init(message: "no pack fetches in this test", noSpace: false, httpStatus: nil)))
    }
    func cancelPackFetch(_ id: String) {}
    func fetchesWaitInQueue(_ ids: some Collection<String>) -> Bool { false }

    /// A pack service that fetches nothing.
    static func service(
        store: BAStore, directory: String, configuration: BasdServices.Configuration, executor: ServiceExecutor
    ) -> PackService {
        PackService(
            store: store, containers: AppContainers(stateDirectory: directory), configuration: configuration,
            executor: executor, transfers: NoPackTransfers(), log: { _ in })
    }
}

/// Which packs an install or update asks the extension about (`PackService.candidate`): the
/// essential and prefetch packs of the event that it would download, with the manifest's fields.
@Suite("asset packs the extension is asked about")
struct ShouldDownloadCandidateTests {
    typealias Policy = PackManifest.DownloadPolicy

    /// A row whose entry is the download manifest's JSON, as `ba pack publish` writes it.
    static func row(_ policy: Policy, server: Int, local: Int?, userInfo: JSONValue? = nil) throws -> PackRow {
        let encoder = JSONEncoder()
        let policyText = String(decoding: try encoder.encode(policy), as: UTF8.self)
        let userInfoText = try userInfo.map { String(decoding: try encoder.encode($0), as: UTF8.self) } ?? "null"
        let entry = """
            {"assetPackID": "p", "version": \(server), "downloadSize": 1234, "downloadPolicy": \(policyText),
             "userInfo": \(userInfoText), "indexURL": "http://127.0.0.1/packs/p/\(server).json",
             "indexSHA256": "\(String(repeating: "0", count: 64))"}
            """
        return try PackRow(StoredPack(appIdentifier: "app", packID: "p", entry: entry, localVersion: local))
    }

    static let both: Set<PackManifest.InstallationEvent> = [.firstInstallation, .subsequentUpdate]

    @Test("the event's essential and prefetch packs not yet current; never on-demand, another event's, or current")
    func candidates() throws {
        let first = PackManifest.InstallationEvent.firstInstallation
        let update = PackManifest.InstallationEvent.subsequentUpdate
        #expect(PackService.candidate(try Self.row(.essential(Self.both), server: 1, local: nil), event: first) != nil)
        #expect(PackService.candidate(try Self.row(.prefetch([first]), server: 1, local: nil), event: first) != nil)
        #expect(PackService.candidate(try Self.row(.essential(Self.both), server: 2, local: 1), event: update) != nil)
        #expect(PackService.candidate(try Self.row(.essential(Self.both), server: 2, local: 2), event: update) == nil)
        #expect(PackService.candidate(try Self.row(.prefetch([update]), server: 1, local: nil), event: first) == nil)
        // An outdated local pack of another policy updates in the background without asking.
        #expect(PackService.candidate(try Self.row(.onDemand, server: 2, local: 1), event: update) == nil)
        #expect(PackService.candidate(try Self.row(.essential([first]), server: 2, local: 1), event: update) == nil)
    }

    @Test("a stored entry basd cannot read is an error naming the pack, never \"not listed\"")
    func unreadableEntry() {
        let stored = StoredPack(appIdentifier: "app", packID: "p", entry: #"{"assetPackID": 7}"#)
        #expect { try PackRow(stored) } throws: { "\($0)".contains("asset pack p of app is not a manifest entry") }
        // A manifest check replaces it: the other columns stay.
        var replaced = PackRow(replacingEntriesOf: StoredPack(appIdentifier: "app", packID: "p", localVersion: 3))
        #expect(replaced.entry == nil && replaced.localVersion == 3)
        replaced.requested = true
        #expect(replaced.stored.requested)
    }

    @Test("the pack is handed over with its version, download size and userInfo as JSON")
    func fields() throws {
        let row = try Self.row(
            .essential(Self.both), server: 7, local: nil, userInfo: .object(["tier": .integer(2)]))
        let record = try #require(PackService.candidate(row, event: .firstInstallation))
        #expect(record.id == "p" && record.version == 7 && record.downloadSize == 1234)
        #expect(record.userInfo.map { String(decoding: $0, as: UTF8.self) } == #"{"tier":2}"#)
        #expect(
            PackService.candidate(
                try Self.row(.essential(Self.both), server: 1, local: nil), event: .firstInstallation)?
                .userInfo == nil)
    }
}
