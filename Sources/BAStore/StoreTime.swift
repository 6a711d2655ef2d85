import Foundation
internal import GRDB

/// A timestamp as the store writes it: GRDB's text for a `Date` (`yyyy-MM-dd HH:mm:ss.SSS`, UTC,
/// milliseconds rounded), formatted with integer arithmetic instead of GRDB's `DateFormatter`,
/// which cost about 6 % of basd's executor time (every store write stamps one or two dates).
/// Reading goes through GRDB's `Date` decoding. Dates outside years 1600–9999 use GRDB's formatter.
struct StoreTime: DatabaseValueConvertible {
    let date: Date

    init(_ date: Date) { self.date = date }

    var databaseValue: DatabaseValue { Self.text(date).map { $0.databaseValue } ?? date.databaseValue }

    static func fromDatabaseValue(_ value: DatabaseValue) -> StoreTime? {
        Date.fromDatabaseValue(value).map(StoreTime.init)
    }

    /// `date` as `yyyy-MM-dd HH:mm:ss.SSS` in UTC, or nil outside years 1600–9999.
    static func text(_ date: Date) -> String? {
        // Rounded to the nearest millisecond, halves up, as the formatter does.
        let milliseconds = (date.timeIntervalSince1970 * 1000 + 0.5).rounded(.down)
        guard milliseconds.isFinite, abs(milliseconds) < 4e14 else { return nil }
        let total = Int64(milliseconds)
        let millisecondsPerDay: Int64 = 86_400_000
        var days = total / millisecondsPerDay
        var rest = total % millisecondsPerDay
        if rest < 0 {
            rest += millisecondsPerDay
            days -= 1
        }
        // Days since 1970-01-01 to a civil date (proleptic Gregorian, Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        // Before 1600 ICU's calendar is Julian (the Gregorian reform of 1582): those are GRDB's to write.
        guard (1600...9999).contains(year) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(23)
        func digits(_ value: Int64, _ count: Int) {
            var divisor: Int64 = 1
            for _ in 1..<count { divisor *= 10 }
            var value = value
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(value / divisor))
                value %= divisor
                divisor /= 10
            }
        }
        digits(year, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(month, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(day, 2)
        bytes.append(UInt8(ascii: " "))
        digits(rest / 3_600_000, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(rest / 60_000 % 60, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(rest / 1_000 % 60, 2)
        bytes.append(UInt8(ascii: "."))
        digits(rest % 1_000, 3)
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension BAStore {
    /// How the store writes `date` (``StoreTime``), for tests that compare it with GRDB's text.
    package static func timestampText(_ date: Date) -> String? { StoreTime.text(date) }
}
