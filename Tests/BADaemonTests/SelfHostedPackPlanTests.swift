import BADaemonProtocol
import Testing

@testable import BADaemon

/// `SelfHostedPackPlan` as a table: what a self-hosted pack download does with the version its
/// (checked) index names and the version in place. A manifest can never take a pack back.
@Suite("self-hosted asset pack plans")
struct SelfHostedPackPlanTests {
    struct Row: CustomStringConvertible {
        var index: Int
        var local: Int?
        var expected: SelfHostedPackPlan
        var description: String { "index \(index) local \(local.map(String.init) ?? "none")" }
    }

    static let rows: [Row] = [
        Row(index: 1, local: nil, expected: .install),
        Row(index: 7, local: nil, expected: .install),
        Row(index: 2, local: 1, expected: .install),
        Row(index: 1, local: 1, expected: .alreadyLocal),
        Row(index: 9_007_199_254_740_991, local: 9_007_199_254_740_991, expected: .alreadyLocal),
        Row(index: 1, local: 2, expected: .refuseOlder(local: 2)),
        Row(index: 3, local: 10, expected: .refuseOlder(local: 10)),
    ]

    @Test("each row", arguments: rows)
    func plan(_ row: Row) {
        #expect(SelfHostedPackPlan.plan(indexVersion: row.index, localVersion: row.local) == row.expected)
    }

    @Test("a pack failure reaches the app with the engine code that maps to its kind")
    func failureCodes() {
        #expect(
            TransferCoordinator.code(of: PackFailure("bad index", code: PackJobMachine.invalidMetadataCode))
                == .checksumMismatch)
        #expect(TransferCoordinator.code(of: PackFailure("disk", errno: 5, operation: "pwrite")) == .fileSystem)
        #expect(TransferCoordinator.code(of: PackFailure("cannot fetch")) == .network)
    }
}
