import BAStore
import Foundation
import GRDB
import Testing

/// The store writes timestamps without GRDB's DateFormatter; the text must be GRDB's exactly
/// (rows written before and after compare and sort as one), and read back as the same moment.
@Suite("store timestamps") struct StoreTimeTests {
    static func grdbText(_ date: Date) -> String? { String.fromDatabaseValue(date.databaseValue) }

    @Test func matchesGRDBsTextForEveryKindOfDate() throws {
        var dates: [Date] = [
            Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: -0.0005), Date(timeIntervalSince1970: -1),
            // 2000-02-29, and its last instant (rounds into March).
            Date(timeIntervalSince1970: 951_782_400), Date(timeIntervalSince1970: 951_868_799.9999),
            Date(timeIntervalSince1970: 4_107_542_399.999), Date(timeIntervalSince1970: 1_798_761_600.5),
            // 1900-01-01, 9999-12-31 23:59:59.999, 1600-01-01.
            Date(timeIntervalSince1970: -2_208_988_800), Date(timeIntervalSince1970: 253_402_300_799.999),
            Date(timeIntervalSince1970: -11_676_096_000),
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            dates.append(Date(timeIntervalSince1970: Double.random(in: -3e9...5e9, using: &generator)))
        }
        for date in dates {
            let ours = try #require(BAStore.timestampText(date), "\(date.timeIntervalSince1970)")
            #expect(ours == Self.grdbText(date), "\(date.timeIntervalSince1970)")
        }
    }

    @Test func leavesYearsBefore1600AndAfter9999ToGRDB() {
        #expect(BAStore.timestampText(Date(timeIntervalSince1970: -11_676_096_001)) == nil)
        #expect(BAStore.timestampText(Date(timeIntervalSince1970: 253_402_300_800)) == nil)
        #expect(BAStore.timestampText(Date(timeIntervalSince1970: .infinity)) == nil)
    }
}
