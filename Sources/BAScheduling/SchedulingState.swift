import Foundation

/// Everything basd remembers about one app's scheduling: its launches, its periodic schedule, its
/// runtime window and its quarantine. basd stores one of these per app as a JSON blob and
/// changes it only on its serial queue.
///
/// The JSON keys are fixed (`usage`, `periodic`, `allowance`, `quarantine`, and each part's own
/// keys, listed in `docs/scheduling.md`); a missing part decodes as its fresh value, so a blob
/// written by an older basd that lacked a part still loads. Use ``jsonData()`` and
/// ``init(jsonData:)`` for a stable encoding: sorted keys, dates as seconds since 1970.
///
/// ```swift
/// var state = try blob.map(SchedulingState.init(jsonData:)) ?? SchedulingState()
/// state.usage.recordLaunch(at: now)
/// try save(state.jsonData())
/// ```
package struct SchedulingState: Codable, Sendable, Equatable {
    /// The app's launches.
    package var usage: AppUsage
    /// The periodic-check schedule.
    package var periodic: PeriodicState
    /// The daily runtime window.
    package var allowance: RuntimeAllowance
    /// Crash and timeout counting, and the quarantine.
    package var quarantine: QuarantineState

    /// The state of a newly registered app: never launched, nothing scheduled, no runtime used,
    /// not quarantined.
    package init() {
        self.init(
            usage: AppUsage(), periodic: PeriodicState(), allowance: RuntimeAllowance(), quarantine: QuarantineState())
    }

    /// Creates a state from its parts.
    package init(usage: AppUsage, periodic: PeriodicState, allowance: RuntimeAllowance, quarantine: QuarantineState) {
        self.usage = usage
        self.periodic = periodic
        self.allowance = allowance
        self.quarantine = quarantine
    }

    /// Decodes a state; each missing part is its fresh value.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        usage = try container.decodeIfPresent(AppUsage.self, forKey: .usage) ?? AppUsage()
        periodic = try container.decodeIfPresent(PeriodicState.self, forKey: .periodic) ?? PeriodicState()
        allowance = try container.decodeIfPresent(RuntimeAllowance.self, forKey: .allowance) ?? RuntimeAllowance()
        quarantine = try container.decodeIfPresent(QuarantineState.self, forKey: .quarantine) ?? QuarantineState()
    }

    /// The state as JSON with sorted keys and dates as seconds since 1970 (a JSON number).
    ///
    /// - Throws: `EncodingError` only for a non-finite date or number, which this module never
    ///   produces from finite inputs.
    package func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .secondsSince1970
        return try encoder.encode(self)
    }

    /// Decodes a state written by ``jsonData()``.
    ///
    /// - Throws: `DecodingError` when `data` is not such a JSON object.
    package init(jsonData data: Data) throws {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        self = try decoder.decode(SchedulingState.self, from: data)
    }

    private enum CodingKeys: String, CodingKey {
        case usage, periodic, allowance, quarantine
    }
}
